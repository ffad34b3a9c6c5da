// What a turn tells the model, and where each part goes: thread-level developer instructions (thread/start and
// thread/resume), turn-scoped collaboration-mode developer instructions, plain turn input placed before the prompt, and a
// suffix for the heartbeat prompt (S6-S10, S18, S19). Pure: the workspace files it uses are read by Workspace.ts. It
// never restates Codex's own base/model instructions and never loads project docs itself: on a native turn with a
// filesystem Codex reads AGENTS.md on its own.
import type { UserInput } from "../../schemas/protocol.js"
import type { TurnKind } from "../../schemas/turnEvents.js"

// ---- bounds (bytes are UTF-8 bytes; every bound includes the truncation marker) ----

/**
 * AGENTS.md snapshot carried as developer instructions on a policy-restricted turn. 32 KiB is Codex's own default
 * `project_doc_max_bytes`, so a restricted turn sees as much of AGENTS.md as a native turn with a filesystem would.
 */
export const AGENTS_MD_MAX_BYTES = 32 * 1024
/** Full MEMORY.md as turn input when memory tools are unavailable. Sent on every such turn, so kept to ~8k tokens. */
export const MEMORY_MD_MAX_BYTES = 32 * 1024
/** BOOTSTRAP.md (a first-run script): short by nature; 16 KiB leaves room for a generous one. */
export const BOOTSTRAP_MD_MAX_BYTES = 16 * 1024
/** Workspace profile files (SOUL.md, IDENTITY.md, USER.md, TOOLS.md ...): at most this many, in the given order. */
export const PROFILE_FILES_MAX_COUNT = 8
/** One profile file. Persona and user notes are meant to be short; 8 KiB is about 2k tokens. */
export const PROFILE_FILE_MAX_BYTES = 8 * 1024
/** All profile files together (after the per-file bound); later files are cut or dropped with a visible note. */
export const PROFILE_FILES_TOTAL_MAX_BYTES = 24 * 1024
/** A profile file left with less of the total budget than this is named as omitted instead of cut to a stub. */
export const PROFILE_FILE_MIN_SHARE_BYTES = 256
/** Gateway-supplied adapter context. */
export const ADAPTER_CONTEXT_MAX_BYTES = 8 * 1024
/** Skills listed in the catalog; the rest are counted in one line. */
export const SKILL_CATALOG_MAX_ENTRIES = 50
/** One skill's description, flattened to one line and cut with an ellipsis. */
export const SKILL_DESCRIPTION_MAX_BYTES = 256
/** One skill's name and one skill's path, flattened to one line. */
export const SKILL_NAME_MAX_BYTES = 80
export const SKILL_PATH_MAX_BYTES = 512
/** Dynamic tool names listed as a hint in the tools section; the rest are counted. */
export const DYNAMIC_TOOL_NAMES_MAX_LISTED = 64
/** One listed tool name or the channel name. */
export const NAME_MAX_BYTES = 64
/**
 * All thread-level developer instructions. The parts above can add up to a little more (32 + 24 + 8 KiB plus the
 * fixed sections); the AGENTS.md snapshot comes last, so it is what gets cut. 64 KiB is about 16k tokens.
 */
export const DEVELOPER_INSTRUCTIONS_MAX_BYTES = 64 * 1024
/** All collaboration-mode developer instructions of one turn (heartbeat guidance, memory, bootstrap, skills). */
export const COLLABORATION_INSTRUCTIONS_MAX_BYTES = 48 * 1024
/** The heartbeat monitor's cron scratch appended to the heartbeat prompt. */
export const CRON_SCRATCH_MAX_BYTES = 8 * 1024

/** Workspace files read as profile files, in this order. */
export const PROFILE_FILE_NAMES = ["SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md"] as const

/** The Codex config key that turns project-doc (AGENTS.md) loading off when set to 0. */
export const PROJECT_DOC_MAX_BYTES_KEY = "project_doc_max_bytes"

// ---- inputs and outputs ----

/** `native`: a Codex app-server turn. `compatibility`: the gateway's own prompt is kept; no harness instructions (S6). */
export type Route = "native" | "compatibility"

/** The last four are internal turns: no project docs, no AGENTS.md fallback, no workspace memory (S8). */
export type { TurnKind }

export const INTERNAL_TURN_KINDS: ReadonlyArray<TurnKind> = ["lightweight", "ringZero", "messageOnly", "toolDisabled"]

export const isInternalTurn = (kind: TurnKind): boolean => INTERNAL_TURN_KINDS.includes(kind)

export interface WorkspaceFile {
  readonly name: string
  readonly content: string
}

/** Workspace files as read (see `readWorkspace`); an absent field means the file is missing or blank. */
export interface Workspace {
  readonly agentsMd?: string
  readonly memoryMd?: string
  readonly bootstrapMd?: string
  readonly profileFiles?: ReadonlyArray<WorkspaceFile>
}

export interface ToolSurface {
  /** names in the searchable `openclaw` namespace (a hint for the model; the catalog itself goes with thread/start) */
  readonly dynamicToolNames: ReadonlyArray<string>
  /**
   * names in `openclaw_direct` (S11): always visible, called directly, kept out of nested Code Mode. sessions_yield is
   * listed there whenever `sessionsYieldAvailable` says so.
   */
  readonly directToolNames?: ReadonlyArray<string> | undefined
  readonly memoryToolsAvailable: boolean
  /** the memory tools by name, for the memory pointer (S9); absent: "the memory tools" */
  readonly memoryToolNames?: ReadonlyArray<string> | undefined
  /** memory switched off for this turn: no pointer, no MEMORY.md or BOOTSTRAP.md input */
  readonly memoryOff?: boolean | undefined
  /** delegation tools served (S9); absent: the `sessions_*` names among the dynamic tools */
  readonly delegationToolNames?: ReadonlyArray<string> | undefined
  /** `openclaw_direct.sessions_yield` is registered for this turn */
  readonly sessionsYieldAvailable: boolean
  /** the `message` tool is registered for this turn */
  readonly messageToolMode: boolean
}

export interface Delivery {
  readonly channel: string
  /** S18: `automatic` posts the final assistant text; `message_tool` keeps it private */
  readonly visibleReplies: "automatic" | "message_tool"
}

export interface Skill {
  readonly name: string
  readonly description: string
  readonly path: string
}

export interface InstructionContext {
  readonly route: Route
  readonly turnKind: TurnKind
  /** no native filesystem environment: Codex cannot read AGENTS.md itself */
  readonly policyRestricted: boolean
  readonly workspace: Workspace
  readonly tools: ToolSurface
  readonly delivery: Delivery
  readonly skills?: ReadonlyArray<Skill>
  readonly heartbeat?: { readonly cronScratch?: string }
  readonly adapterContext?: string
  /** compatibility route: the gateway's own system prompt, kept as the thread's base instructions (S6) */
  readonly systemPrompt?: string
}

/** Fields for thread/start and thread/resume. */
export interface ThreadStartInstructions {
  /** always "none": workspace profile files and the agent identity stay authoritative (S7) */
  readonly personality: "none"
  /** compatibility route: the gateway's own system prompt in place of Codex's base instructions (S6) */
  readonly baseInstructions?: string
  /** harness sections; native route only */
  readonly developerInstructions?: string
  /** Codex config overrides; only set to switch project-doc loading off on internal turns */
  readonly config?: Readonly<Record<string, unknown>>
}

export interface TurnInstructions {
  readonly threadStart: ThreadStartInstructions
  /** turn-scoped collaboration-mode developer instructions; undefined keeps the turn in Codex Default mode */
  readonly collaborationDeveloperInstructions?: string
  /** plain context items, to be placed before the user's prompt */
  readonly extraInput: ReadonlyArray<UserInput>
  /** appended to the heartbeat prompt */
  readonly promptSuffix?: string
}

// ---- UTF-8 truncation ----

const encoder = new TextEncoder()
const decoder = new TextDecoder()

export const utf8Length = (text: string): number => encoder.encode(text).length

/** The marker line that ends every truncated block. */
export const truncationMarker = (omittedBytes: number, totalBytes: number): string =>
  `[truncated: ${omittedBytes} of ${totalBytes} bytes omitted]`

/** The largest cut <= `at` that does not fall inside a multi-byte sequence. */
const codePointBoundary = (bytes: Uint8Array, at: number): number => {
  let cut = Math.min(at, bytes.length)
  while (cut > 0 && cut < bytes.length && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut--
  return cut
}

/**
 * Decodes a prefix of some content (`totalBytes` long in all) so that the result is at most `maxBytes`. Anything cut
 * ends with a newline and `truncationMarker(...)`; when `maxBytes` cannot even hold the marker, the result is the longest
 * whole-character prefix that fits (bounds in this module are far above that).
 */
export const truncateUtf8Bytes = (bytes: Uint8Array, totalBytes: number, maxBytes: number): string => {
  const total = Math.max(totalBytes, bytes.length)
  const limit = Math.max(0, Math.floor(maxBytes))
  if (total <= limit) return decoder.decode(bytes)
  // omitted <= total, so a marker built with `total` is at least as long as the real one
  const reserve = utf8Length(`\n${truncationMarker(total, total)}`)
  if (reserve > limit) return decoder.decode(bytes.subarray(0, codePointBoundary(bytes, limit)))
  const cut = codePointBoundary(bytes, limit - reserve)
  return `${decoder.decode(bytes.subarray(0, cut))}\n${truncationMarker(total - cut, total)}`
}

/** `text` if it fits in `maxBytes` UTF-8 bytes, else its longest whole-character prefix plus a marker line. */
export const truncateUtf8 = (text: string, maxBytes: number): string => {
  if (text.length <= maxBytes / 3) return text // cannot exceed: at most 3 bytes per UTF-16 unit
  const bytes = encoder.encode(text)
  return truncateUtf8Bytes(bytes, bytes.length, maxBytes)
}

/** One line (whitespace collapsed), at most `maxBytes`, ending in "…" when cut. */
export const clipInline = (text: string, maxBytes: number): string => {
  const line = text.replace(/\s+/g, " ").trim()
  const bytes = encoder.encode(line)
  if (bytes.length <= maxBytes) return line
  if (maxBytes < 3) return decoder.decode(bytes.subarray(0, codePointBoundary(bytes, maxBytes)))
  return `${decoder.decode(bytes.subarray(0, codePointBoundary(bytes, maxBytes - 3)))}…` // the ellipsis is 3 bytes
}

const present = (text: string | undefined): text is string => text !== undefined && text.trim() !== ""

// ---- section texts ----

const fileBlock = (name: string, content: string): string =>
  `<workspace_file name="${name}">\n${content.trimEnd()}\n</workspace_file>`

const deliverySection = (delivery: Delivery, messageTool: boolean): string => {
  const channel = clipInline(delivery.channel, NAME_MAX_BYTES) || "the source conversation"
  if (delivery.visibleReplies === "automatic") {
    return [
      "## Replies",
      `You are answering on ${channel}. Your final assistant message is posted there automatically: write it for the person reading it.`,
      messageTool
        ? `Do not repeat it with message(action="send"); use that tool only to reach another target or to send something before you finish.`
        : "Nothing else you write (reasoning, tool output) is shown to them."
    ].join("\n")
  }
  return [
    "## Replies",
    `You are answering on ${channel}. Your final assistant message is private: it is not delivered.`,
    messageTool
      ? `Only message(action="send") is visible to the user. Send what they should see with it; if nothing needs saying, send nothing.`
      : "The message tool is not available in this turn, so nothing you write reaches the user."
  ].join("\n")
}

const listNames = (names: ReadonlyArray<string>): string => {
  const listed = names.slice(0, DYNAMIC_TOOL_NAMES_MAX_LISTED).map((n) => clipInline(n, NAME_MAX_BYTES))
  const more = names.length - listed.length
  return `${listed.join(", ")}${more > 0 ? ` and ${more} more` : ""}`
}

const toolsSection = (names: ReadonlyArray<string>, direct: ReadonlyArray<string>): string => {
  const lines = ["## Gateway tools"]
  if (names.length > 0) {
    lines.push(
      "Gateway tools live in the searchable `openclaw` namespace and are not preloaded: find one with tool search, then call it.",
      `In \`openclaw\`: ${listNames(names)}.`
    )
  }
  if (direct.length > 0) {
    lines.push(
      "Tools in `openclaw_direct` are always visible: call them directly, never from nested code execution (they are not " +
        "available there).",
      `In \`openclaw_direct\`: ${listNames(direct)}.`
    )
  }
  lines.push(
    "Gateway tool results are text: parse JSON-looking output yourself. From code, call gateway tools one at a time (no Promise.all)."
  )
  return lines.join("\n")
}

const delegationSection =
  "## Delegation\n" +
  "Hand self-contained work to a child session with the gateway's session tools. A child does not see this conversation: " +
  "give it the full task, the inputs it needs and what to return. You remain responsible for the answer to the user."

const sessionsYieldSection =
  "## Waiting for child sessions\n" +
  "When a child's result will arrive later, tell the user briefly what is underway and call sessions_yield to end this turn; " +
  "the result comes back to you as a new turn.\n" +
  "Wait within the turn (wait_agent) only when your very next step cannot proceed without the child's result.\n" +
  "Never poll for completion (repeated status checks, sleeps or list calls): yield instead."

const profileSection = (files: ReadonlyArray<WorkspaceFile>): string | undefined => {
  const usable = files.filter((f) => present(f.content))
  if (usable.length === 0) return undefined
  const blocks: Array<string> = []
  let budget = PROFILE_FILES_TOTAL_MAX_BYTES
  const kept = usable.slice(0, PROFILE_FILES_MAX_COUNT)
  for (const file of kept) {
    const name = clipInline(file.name, NAME_MAX_BYTES)
    if (budget < PROFILE_FILE_MIN_SHARE_BYTES) {
      blocks.push(`(${name} omitted: profile files exceed ${PROFILE_FILES_TOTAL_MAX_BYTES} bytes)`)
      continue
    }
    const content = truncateUtf8(truncateUtf8(file.content, PROFILE_FILE_MAX_BYTES), budget)
    budget -= utf8Length(content)
    blocks.push(fileBlock(name, content))
  }
  const dropped = usable.length - kept.length
  if (dropped > 0) blocks.push(`(${dropped} more profile files omitted: at most ${PROFILE_FILES_MAX_COUNT} are included)`)
  return [
    "## Workspace profile",
    "These files define who you are and who you work with. They take precedence over any default persona.",
    ...blocks
  ].join("\n")
}

const agentsSection = (agentsMd: string): string =>
  [
    "## Workspace AGENTS.md",
    "This turn has no filesystem access to the workspace, so here is a snapshot of its AGENTS.md. Follow it as project instructions.",
    fileBlock("AGENTS.md", truncateUtf8(agentsMd, AGENTS_MD_MAX_BYTES))
  ].join("\n")

const heartbeatSection =
  "## Heartbeat\n" +
  "This turn is a scheduled heartbeat, not a message from the user. Do what the heartbeat prompt asks (check its tasks, " +
  "pending follow-ups, anything time-sensitive) and take initiative only where it clearly helps.\n" +
  "Then call heartbeat_respond: quiet when nothing needs the user's attention, notify with a short message when something does. " +
  "Do not invent busywork, and do not repeat a notification you already sent."

const memoryPointerSection = (tools: ReadonlyArray<string> | undefined): string =>
  "## Memory\n" +
  "Long-term memory is kept in the workspace MEMORY.md and is not preloaded. Before answering about earlier work, decisions, " +
  `people, preferences or dates, search it with ${
    tools !== undefined && tools.length > 0 ? listNames(tools) : "the memory tools"
  }. Write durable facts back when asked to remember something.`

const bootstrapPreamble = "BOOTSTRAP.md is active for this workspace: follow it before anything else, then tell the user when it is done."

const skillsSection = (skills: ReadonlyArray<Skill>): string => {
  const listed = skills.slice(0, SKILL_CATALOG_MAX_ENTRIES)
  const lines = [
    "## Skills",
    "A skill is a folder of instructions for one kind of task. When a task matches a description below, read that skill's " +
      "SKILL.md (at the path given) before acting, and follow it.",
    ...listed.map(
      (s) =>
        `- ${clipInline(s.name, SKILL_NAME_MAX_BYTES)}: ${clipInline(s.description, SKILL_DESCRIPTION_MAX_BYTES)} ` +
        `(${clipInline(s.path, SKILL_PATH_MAX_BYTES)})`
    )
  ]
  const more = skills.length - listed.length
  if (more > 0) lines.push(`(${more} more skills not listed)`)
  return lines.join("\n")
}

// ---- the builder ----

const suppressProjectDocs: Readonly<Record<string, unknown>> = { [PROJECT_DOC_MAX_BYTES_KEY]: 0 }

const cronSuffix = (ctx: InstructionContext): string | undefined => {
  const scratch = ctx.heartbeat?.cronScratch
  if (ctx.turnKind !== "heartbeat" || !present(scratch)) return undefined
  return `\n\nCron scratch from the heartbeat monitor:\n${truncateUtf8(scratch.trim(), CRON_SCRATCH_MAX_BYTES)}`
}

const joinSections = (sections: ReadonlyArray<string | undefined>, maxBytes: number): string | undefined => {
  const kept = sections.filter((s): s is string => s !== undefined)
  return kept.length === 0 ? undefined : truncateUtf8(kept.join("\n\n"), maxBytes)
}

/**
 * Everything the harness adds to one turn. Tools come from `ctx.tools`, except on a `toolDisabled` turn, which gets no
 * tool guidance whatever the record says. Internal turns keep delivery, adapter context and profile files, but get no
 * AGENTS.md (Codex's project-doc loading is switched off with `project_doc_max_bytes: 0`), memory, bootstrap or skills.
 */
export const buildTurnInstructions = (ctx: InstructionContext): TurnInstructions => {
  const internal = isInternalTurn(ctx.turnKind)
  const promptSuffix = cronSuffix(ctx)
  const threadBase = {
    personality: "none" as const,
    ...(internal ? { config: suppressProjectDocs } : {})
  }
  if (ctx.route === "compatibility") {
    const system = present(ctx.systemPrompt) ? { baseInstructions: ctx.systemPrompt } : {}
    return { threadStart: { ...threadBase, ...system }, extraInput: [], ...(promptSuffix !== undefined ? { promptSuffix } : {}) }
  }

  // a message-only turn keeps the message tool and nothing else; a tool-disabled turn keeps none
  const toolsOn = ctx.turnKind !== "toolDisabled" && ctx.turnKind !== "messageOnly"
  const names = toolsOn ? ctx.tools.dynamicToolNames : []
  const sessionsYield = toolsOn && ctx.tools.sessionsYieldAvailable
  const declaredDirect = toolsOn ? (ctx.tools.directToolNames ?? []) : []
  const direct = sessionsYield && !declaredDirect.includes("sessions_yield") ? [...declaredDirect, "sessions_yield"] : declaredDirect
  const memoryOff = ctx.tools.memoryOff === true
  const memoryTools = toolsOn && !memoryOff && ctx.tools.memoryToolsAvailable
  const messageTool = ctx.turnKind !== "toolDisabled" && ctx.tools.messageToolMode
  const delegationTools = toolsOn
    ? (ctx.tools.delegationToolNames ?? [...names, ...direct].filter((n) => n.startsWith("sessions_")))
    : []
  const delegation = sessionsYield || delegationTools.length > 0
  const heartbeat = ctx.turnKind === "heartbeat"
  const ws = ctx.workspace

  const developerInstructions = joinSections(
    [
      deliverySection(ctx.delivery, messageTool),
      names.length > 0 || direct.length > 0 || sessionsYield ? toolsSection(names, direct) : undefined,
      delegation ? delegationSection : undefined,
      sessionsYield ? sessionsYieldSection : undefined,
      present(ctx.adapterContext)
        ? `## Adapter context\n${truncateUtf8(ctx.adapterContext.trim(), ADAPTER_CONTEXT_MAX_BYTES)}`
        : undefined,
      profileSection(ws.profileFiles ?? []),
      // last, so that the total bound cuts the snapshot rather than the runtime sections
      ctx.policyRestricted && !internal && present(ws.agentsMd) ? agentsSection(ws.agentsMd) : undefined
    ],
    DEVELOPER_INSTRUCTIONS_MAX_BYTES
  )

  const withBootstrap = !internal && !memoryOff && present(ws.bootstrapMd)
  const bootstrapText = withBootstrap
    ? `${bootstrapPreamble}\n${fileBlock("BOOTSTRAP.md", truncateUtf8(ws.bootstrapMd ?? "", BOOTSTRAP_MD_MAX_BYTES))}`
    : undefined

  const skills = !internal && ctx.skills !== undefined && ctx.skills.length > 0 ? ctx.skills : undefined
  const collaborationDeveloperInstructions = joinSections(
    [
      heartbeat ? heartbeatSection : undefined,
      !internal && memoryTools ? memoryPointerSection(ctx.tools.memoryToolNames) : undefined,
      memoryTools && bootstrapText !== undefined ? `## Bootstrap\n${bootstrapText}` : undefined,
      skills !== undefined ? skillsSection(skills) : undefined
    ],
    COLLABORATION_INSTRUCTIONS_MAX_BYTES
  )

  const extraInput: Array<UserInput> = []
  if (!internal && !memoryTools && !memoryOff) {
    if (bootstrapText !== undefined) extraInput.push({ type: "text", text: bootstrapText })
    if (present(ws.memoryMd)) {
      extraInput.push({
        type: "text",
        text:
          "Long-term memory (the workspace MEMORY.md; no memory tools are available in this turn):\n" +
          fileBlock("MEMORY.md", truncateUtf8(ws.memoryMd, MEMORY_MD_MAX_BYTES))
      })
    }
  }

  return {
    threadStart: {
      ...threadBase,
      ...(developerInstructions !== undefined ? { developerInstructions } : {})
    },
    ...(collaborationDeveloperInstructions !== undefined ? { collaborationDeveloperInstructions } : {}),
    extraInput,
    ...(promptSuffix !== undefined ? { promptSuffix } : {})
  }
}

/** The turn/start `input`: the extra context items, then the prompt with its suffix. */
export const turnInput = (instructions: TurnInstructions, prompt: string): ReadonlyArray<UserInput> => [
  ...instructions.extraInput,
  { type: "text", text: `${prompt}${instructions.promptSuffix ?? ""}` }
]

/** The turn/start `collaborationMode` value, or undefined to leave the turn in Codex Default mode (S19). */
export interface CollaborationMode {
  readonly mode: "default" | "plan"
  readonly settings: {
    readonly model: string
    readonly reasoning_effort: string | null
    readonly developer_instructions: string | null
  }
}

export const collaborationMode = (
  instructions: TurnInstructions,
  settings: { readonly model: string; readonly reasoningEffort?: string | undefined }
): CollaborationMode | undefined =>
  instructions.collaborationDeveloperInstructions === undefined
    ? undefined
    : {
      mode: "default",
      settings: {
        model: settings.model,
        reasoning_effort: settings.reasoningEffort ?? null,
        developer_instructions: instructions.collaborationDeveloperInstructions
      }
    }

export { readBounded, readWorkspace } from "./Workspace.js"
