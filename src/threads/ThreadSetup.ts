// What a session's threads start with: the tools of every turn extension (advertised as dynamic tools, S11), the
// thread-level developer instructions (S6-S10) built from the workspace and the turn's context (TurnContext.ts), and
// the thread config: the extensions' (per-thread hooks, S20), project-doc suppression for internal turns (S8) and
// Code Mode's direct-only namespace (S11). A supervised branch starts its canonical thread with the same (S15).
import { FileSystem } from "@effect/platform"
import { Context, Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import * as path from "node:path"
import { Settings } from "../config/Settings.js"
import type { HarnessTool } from "../ports/DynamicTools.js"
import { directNamespace, dynamicToolSpecs, namespaceOf } from "../tools/ToolCatalog.js"
import * as Instructions from "../turn/Instructions.js"
import type { MemoryMode, TurnContext } from "../turn/TurnContext.js"
import { type TurnKind, TurnExtensions } from "../turn/TurnExtension.js"
import type { ThreadExtras } from "../turn/TurnRunner.js"
import { readSkills } from "../turn/Skills.js"
import { fileSignature, readOptional, readWorkspace, workspaceFileNames } from "../turn/Workspace.js"

export interface ThreadSetup {
  /** the tools this turn serves: all of them, only `message` on a message-only turn, none on a tool-disabled one */
  readonly tools: ReadonlyArray<HarnessTool>
  readonly instructions: Instructions.TurnInstructions
  readonly extras: ThreadExtras
}

export interface ThreadSetupService {
  readonly forSession: (sessionId: string, kind?: TurnKind, context?: TurnContext) => Effect.Effect<ThreadSetup>
}

/** sessions (times turn kinds and contexts) whose setup is kept */
export const maxCachedSetups = 256

/** The compatibility route's system prompt file (settings.systemPromptPath) is read up to this many bytes. */
export const SYSTEM_PROMPT_MAX_BYTES = 64 * 1024

/** Memory tools by the names gateways give them; serving one of them means memory is reached through tools (S9). */
export const memoryToolNames: ReadonlyArray<string> = ["memory_search", "memory_get"]

/**
 * Thread config that keeps `openclaw_direct` out of nested Code Mode (S11). A dotted key, so it sets only this field:
 * a table under `features.code_mode` would replace the user's `features.code_mode = true` and switch Code Mode off
 * (both checked on the pinned binary; with this key `openclaw_direct` leaves exec's nested declarations and stays a
 * namespace of its own).
 */
export const directOnlyCodeModeConfig: Readonly<Record<string, unknown>> = {
  "features.code_mode.direct_only_tool_namespaces": [directNamespace]
}

/** The tools a turn of this kind serves (S8): a message-only turn only `message`, a tool-disabled turn none. */
export const servedTools = (tools: ReadonlyArray<HarnessTool>, kind: TurnKind): ReadonlyArray<HarnessTool> =>
  kind === "toolDisabled" ? [] : kind === "messageOnly" ? tools.filter((t) => t.name === "message") : tools

const contextKey = (context: TurnContext): string =>
  Object.keys(context).length === 0 ? "" : createHash("sha256").update(JSON.stringify(context)).digest("base64url")

export class ThreadSetups extends Context.Tag("codex-harness/ThreadSetups")<ThreadSetups, ThreadSetupService>() {}

export const make = Effect.gen(function* () {
  const settings = yield* Settings
  const extensions = yield* TurnExtensions
  const fs = yield* FileSystem.FileSystem
  // the scratch is bounded when the instructions are built; a missing or unreadable one is simply absent
  const readCronScratch = (file: string | undefined) =>
    file === undefined
      ? Effect.succeed(undefined)
      : fs.readFileString(file).pipe(
        Effect.map((text) => (text.trim() === "" ? undefined : text)),
        Effect.orElseSucceed(() => undefined)
      )
  const visibleReplies = settings.visibleReplies ?? "automatic"

  // A session's setup is built once and used again while the files it is built from are unchanged (their stat says
  // so): no workspace reads and no instructions rebuilt on a warm turn. Bounded; the oldest entry goes first.
  const built = new Map<string, { readonly signature: string; readonly setup: ThreadSetup }>()
  const workspaceFiles = workspaceFileNames()
  // the files a setup is built from besides the workspace's: the cron scratch (heartbeats), the compatibility route's
  // system prompt and the skills directory (its own stat: adding or removing a skill changes it; editing a SKILL.md
  // in place is picked up by the next process)
  const otherFiles = (kind: TurnKind) =>
    [kind === "heartbeat" ? settings.cronScratchPath : undefined, settings.systemPromptPath, settings.skillsPath].filter(
      (file): file is string => file !== undefined
    )
  const signatureFor = (kind: TurnKind) =>
    Effect.gen(function* () {
      const workspace = yield* fileSignature(settings.cwd, workspaceFiles)
      const others = yield* Effect.forEach(otherFiles(kind), (file) => fileSignature(path.dirname(file), [path.basename(file)]))
      return [workspace, ...others].join("|")
    }).pipe(Effect.provideService(FileSystem.FileSystem, fs))

  const forSession = (sessionId: string, kind: TurnKind = "user", context: TurnContext = {}) =>
    Effect.gen(function* () {
      const key = `${kind}\u0000${sessionId}\u0000${contextKey(context)}`
      const signature = yield* signatureFor(kind)
      const known = built.get(key)
      if (known !== undefined && known.signature === signature) return known.setup
      const setup = yield* build(sessionId, kind, context)
      built.delete(key)
      built.set(key, { signature, setup })
      if (built.size > maxCachedSetups) built.delete(built.keys().next().value!)
      return setup
    }).pipe(Effect.withSpan("ThreadSetup.forSession", { attributes: { sessionId, kind } }))

  // the settings' context (config file keys) under the port's and the request's
  const settingsContext = (context: TurnContext) =>
    Effect.gen(function* () {
      const route = context.route ?? settings.route ?? "native"
      const systemPrompt = context.systemPrompt ??
        (route === "compatibility" ? yield* readOptional(settings.systemPromptPath, SYSTEM_PROMPT_MAX_BYTES) : undefined)
      const skills = context.skills ?? (settings.skillsPath !== undefined ? yield* readSkills(settings.skillsPath) : undefined)
      const memory: MemoryMode | undefined = context.memory ??
        (settings.memoryMode !== undefined ? { mode: settings.memoryMode } : undefined)
      return {
        ...context,
        route,
        ...(systemPrompt !== undefined ? { systemPrompt } : {}),
        ...(skills !== undefined ? { skills } : {}),
        ...(memory !== undefined ? { memory } : {}),
        ...(context.adapterContext === undefined && settings.adapterContext !== undefined
          ? { adapterContext: settings.adapterContext }
          : {})
      } satisfies TurnContext
    }).pipe(Effect.provideService(FileSystem.FileSystem, fs))

  const build = (sessionId: string, kind: TurnKind, given: TurnContext) =>
    Effect.gen(function* () {
      const context = yield* settingsContext(given)
      const allTools = extensions.flatMap((e) => e.tools?.(sessionId) ?? [])
      const tools = servedTools(allTools, kind)
      const extensionConfig = yield* Effect.forEach(extensions, (e) => e.threadConfig?.(sessionId) ?? Effect.succeed({}))
      const read = yield* readWorkspace(settings.cwd).pipe(Effect.provideService(FileSystem.FileSystem, fs))
      const workspace = context.profileFiles !== undefined ? { ...read, profileFiles: context.profileFiles } : read
      const cronScratch = kind === "heartbeat" ? yield* readCronScratch(settings.cronScratchPath) : undefined
      const names = (ns: "direct" | "searchable") =>
        allTools.filter((t) => (namespaceOf(t) === directNamespace) === (ns === "direct")).map((t) => t.name)
      const servedMemoryTools = allTools.map((t) => t.name).filter((n) => memoryToolNames.includes(n))
      const memory: MemoryMode = context.memory ??
        (servedMemoryTools.length > 0 ? { mode: "tools", tools: servedMemoryTools } : { mode: "inline" })
      const instructions = Instructions.buildTurnInstructions({
        route: context.route,
        turnKind: kind,
        policyRestricted: context.policyRestricted ?? settings.policyRestricted ?? false,
        workspace,
        tools: {
          dynamicToolNames: names("searchable"),
          directToolNames: names("direct"),
          memoryToolsAvailable: memory.mode === "tools",
          ...(memory.mode === "tools" ? { memoryToolNames: memory.tools ?? servedMemoryTools } : {}),
          memoryOff: memory.mode === "off",
          ...(context.delegationTools !== undefined ? { delegationToolNames: context.delegationTools } : {}),
          sessionsYieldAvailable: allTools.some((t) => t.name === "sessions_yield"),
          messageToolMode: visibleReplies === "message_tool"
        },
        delivery: { channel: context.channel ?? settings.channel ?? "terminal", visibleReplies },
        ...(context.skills !== undefined ? { skills: context.skills } : {}),
        ...(context.adapterContext !== undefined ? { adapterContext: context.adapterContext } : {}),
        ...(context.systemPrompt !== undefined ? { systemPrompt: context.systemPrompt } : {}),
        ...(kind === "heartbeat" ? { heartbeat: cronScratch !== undefined ? { cronScratch } : {} } : {})
      })
      const hasDirect = allTools.some((t) => namespaceOf(t) === directNamespace)
      const threadConfig = Object.assign(
        {},
        hasDirect ? directOnlyCodeModeConfig : {},
        instructions.threadStart.config,
        ...extensionConfig
      )
      const extras: ThreadExtras = {
        baseInstructions: instructions.threadStart.baseInstructions,
        developerInstructions: instructions.threadStart.developerInstructions,
        config: Object.keys(threadConfig).length > 0 ? threadConfig : undefined,
        // every tool is advertised: Codex keeps a thread's dynamic tools, and later turns of other kinds need them
        dynamicTools: dynamicToolSpecs(allTools)
      }
      return { tools, instructions, extras } satisfies ThreadSetup
    })

  return { forSession } satisfies ThreadSetupService
})

export const layer: Layer.Layer<ThreadSetups, never, Settings | TurnExtensions | FileSystem.FileSystem> = Layer.effect(
  ThreadSetups,
  make
)
