// Instructions: where each piece of harness context goes for a turn, and the size bounds. Pure, except readWorkspace.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  AGENTS_MD_MAX_BYTES,
  BOOTSTRAP_MD_MAX_BYTES,
  clipInline,
  collaborationMode,
  COLLABORATION_INSTRUCTIONS_MAX_BYTES,
  CRON_SCRATCH_MAX_BYTES,
  DEVELOPER_INSTRUCTIONS_MAX_BYTES,
  type InstructionContext,
  INTERNAL_TURN_KINDS,
  MEMORY_MD_MAX_BYTES,
  PROFILE_FILE_MAX_BYTES,
  PROFILE_FILES_MAX_COUNT,
  PROFILE_FILES_TOTAL_MAX_BYTES,
  readWorkspace,
  SKILL_CATALOG_MAX_ENTRIES,
  SKILL_DESCRIPTION_MAX_BYTES,
  truncateUtf8,
  truncateUtf8Bytes,
  truncationMarker,
  buildTurnInstructions,
  type TurnKind,
  turnInput,
  utf8Length
} from "../../src/turn/Instructions.js"

const ALL_KINDS: ReadonlyArray<TurnKind> = ["user", "heartbeat", "lightweight", "ringZero", "messageOnly", "toolDisabled"]

const AGENTS = "# Project rules\nAlways run the linter before committing. AGENTS-SENTINEL"
const MEMORY = "- The user prefers metric units. MEMORY-SENTINEL"
const BOOTSTRAP = "Ask the user for their name, then write it to USER.md. BOOTSTRAP-SENTINEL"

const ctx = (overrides: Partial<InstructionContext> = {}): InstructionContext => ({
  route: "native",
  turnKind: "user",
  policyRestricted: false,
  workspace: {
    agentsMd: AGENTS,
    memoryMd: MEMORY,
    bootstrapMd: BOOTSTRAP,
    profileFiles: [{ name: "SOUL.md", content: "You are Molty, calm and precise. SOUL-SENTINEL" }]
  },
  tools: { dynamicToolNames: ["web_search", "cron"], memoryToolsAvailable: true, sessionsYieldAvailable: false, messageToolMode: false },
  delivery: { channel: "webchat", visibleReplies: "automatic" },
  ...overrides
})

const withTools = (base: InstructionContext, tools: Partial<InstructionContext["tools"]>): InstructionContext => ({
  ...base,
  tools: { ...base.tools, ...tools }
})

/** every string the turn sends, for "appears nowhere" checks */
const everything = (c: InstructionContext): string => {
  const out = buildTurnInstructions(c)
  return [
    out.threadStart.developerInstructions ?? "",
    out.collaborationDeveloperInstructions ?? "",
    ...out.extraInput.map((i) => (i.type === "text" ? i.text : i.path)),
    out.promptSuffix ?? ""
  ].join("\n")
}

/** the content between `<workspace_file name="NAME">` and its closing tag */
const fileContent = (text: string, name: string): string | undefined => {
  const open = `<workspace_file name="${name}">\n`
  const start = text.indexOf(open)
  if (start < 0) return undefined
  const end = text.indexOf("\n</workspace_file>", start)
  return text.slice(start + open.length, end < 0 ? undefined : end)
}

const markerOf = (text: string) => /\[truncated: (\d+) of (\d+) bytes omitted\]$/.exec(text)

describe("Instructions: routes and thread fields", () => {
  it("[S7] personality is \"none\" on every route, kind and policy", () => {
    for (const route of ["native", "compatibility"] as const) {
      for (const turnKind of ALL_KINDS) {
        for (const policyRestricted of [false, true]) {
          expect(buildTurnInstructions(ctx({ route, turnKind, policyRestricted })).threadStart.personality).toBe("none")
        }
      }
    }
  })

  it("[S6] a native turn gets harness developer instructions; the compatibility route gets none of the harness's context", () => {
    const native = buildTurnInstructions(ctx({ skills: [{ name: "pdf", description: "Read PDFs", path: "/s/pdf" }] }))
    expect(native.threadStart.developerInstructions).toContain("## Replies")
    expect(native.collaborationDeveloperInstructions).toContain("## Skills")

    for (const turnKind of ALL_KINDS) {
      const compat = buildTurnInstructions(
        ctx({
          route: "compatibility",
          turnKind,
          policyRestricted: true,
          adapterContext: "ADAPTER",
          skills: [{ name: "pdf", description: "Read PDFs", path: "/s/pdf" }],
          tools: { dynamicToolNames: ["x"], memoryToolsAvailable: false, sessionsYieldAvailable: true, messageToolMode: true }
        })
      )
      expect(compat.threadStart.developerInstructions).toBeUndefined()
      expect(compat.collaborationDeveloperInstructions).toBeUndefined()
      expect(compat.extraInput).toEqual([])
    }
  })

  it("[S7][S8] an ordinary turn sets no config, so Codex keeps its own project-doc loading", () => {
    for (const turnKind of ["user", "heartbeat"] as const) {
      for (const policyRestricted of [false, true]) {
        expect(buildTurnInstructions(ctx({ turnKind, policyRestricted })).threadStart.config).toBeUndefined()
      }
    }
  })
})

describe("Instructions: AGENTS.md snapshot", () => {
  it("[S8] a policy-restricted user or heartbeat turn carries the AGENTS.md snapshot in thread-level developer instructions", () => {
    for (const turnKind of ["user", "heartbeat"] as const) {
      const out = buildTurnInstructions(ctx({ turnKind, policyRestricted: true }))
      expect(fileContent(out.threadStart.developerInstructions ?? "", "AGENTS.md")).toBe(AGENTS)
      expect(out.collaborationDeveloperInstructions ?? "").not.toContain("AGENTS-SENTINEL")
      expect(out.extraInput.some((i) => i.type === "text" && i.text.includes("AGENTS-SENTINEL"))).toBe(false)
    }
  })

  it("[S8] a turn with a native filesystem leaves AGENTS.md to Codex (no snapshot)", () => {
    expect(everything(ctx({ policyRestricted: false }))).not.toContain("AGENTS-SENTINEL")
  })

  it("[S8] each internal kind suppresses project-doc loading (project_doc_max_bytes: 0) and the AGENTS.md fallback", () => {
    expect(INTERNAL_TURN_KINDS).toEqual(["lightweight", "ringZero", "messageOnly", "toolDisabled"])
    for (const turnKind of INTERNAL_TURN_KINDS) {
      for (const route of ["native", "compatibility"] as const) {
        const c = ctx({ turnKind, route, policyRestricted: true })
        const out = buildTurnInstructions(c)
        expect(out.threadStart.config).toEqual({ project_doc_max_bytes: 0 })
        expect(everything(c)).not.toContain("AGENTS-SENTINEL")
      }
    }
  })

  it("[S8] a 1 MiB AGENTS.md is cut to AGENTS_MD_MAX_BYTES at a character boundary, with a marker saying how much was cut", () => {
    // 4-byte characters only: the byte budget left beside the marker (32,722) falls inside one
    const huge = "𝄞".repeat(256 * 1024)
    const total = utf8Length(huge)
    expect(total).toBe(1024 * 1024)
    const out = buildTurnInstructions(ctx({ policyRestricted: true, workspace: { agentsMd: huge } }))
    const snapshot = fileContent(out.threadStart.developerInstructions ?? "", "AGENTS.md") ?? ""
    expect(utf8Length(snapshot)).toBeLessThanOrEqual(AGENTS_MD_MAX_BYTES)
    expect(utf8Length(snapshot)).toBeGreaterThan(AGENTS_MD_MAX_BYTES - 64)
    const marker = markerOf(snapshot)
    expect(marker).not.toBeNull()
    const kept = snapshot.slice(0, snapshot.lastIndexOf("\n["))
    expect(huge.startsWith(kept)).toBe(true)
    expect(kept).not.toContain("\uFFFD")
    expect(Number(marker?.[1]) + utf8Length(kept)).toBe(total)
    expect(Number(marker?.[2])).toBe(total)
    expect(utf8Length(out.threadStart.developerInstructions ?? "")).toBeLessThanOrEqual(DEVELOPER_INSTRUCTIONS_MAX_BYTES)
  })
})

describe("Instructions: UTF-8 truncation", () => {
  const check = (input: string, maxBytes: number, out: string) => {
    expect(utf8Length(out)).toBeLessThanOrEqual(maxBytes)
    const total = utf8Length(input)
    if (total <= maxBytes) {
      expect(out).toBe(input)
      return
    }
    const marker = markerOf(out)
    const kept = marker === null ? out : out.slice(0, out.length - marker[0].length - 1)
    // a whole-character prefix: nothing split, nothing replaced
    expect(input.startsWith(kept)).toBe(true)
    if (marker !== null) {
      expect(Number(marker[1]) + utf8Length(kept)).toBe(total)
      expect(Number(marker[2])).toBe(total)
    } else {
      // only when the bound cannot hold the marker at all
      expect(utf8Length(`\n${truncationMarker(total, total)}`)).toBeGreaterThan(maxBytes)
    }
  }

  it("[S8] property: the result fits the bound, keeps a whole-character prefix and reports the cut exactly", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300, size: "max" }), fc.integer({ min: 0, max: 1200 }), (input, maxBytes) => {
        check(input, maxBytes, truncateUtf8(input, maxBytes))
      }),
      { numRuns: 1000 }
    )
  })

  it("[S8] property: a read-time prefix (maxBytes + 1 bytes, possibly ending mid-character) truncates the same way", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", minLength: 1, maxLength: 300, size: "max" }), fc.integer({ min: 60, max: 600 }), (input, maxBytes) => {
        const bytes = new TextEncoder().encode(input)
        const prefix = bytes.subarray(0, maxBytes + 1)
        const out = truncateUtf8Bytes(prefix, bytes.length, maxBytes)
        check(input, maxBytes, out)
        expect(out).toBe(truncateUtf8(input, maxBytes))
      }),
      { numRuns: 1000 }
    )
  })

  it("[S8] never splits a multi-byte character at any bound", () => {
    const text = "€".repeat(100) + "𝄞".repeat(100) // 300 + 400 bytes
    for (let max = 0; max <= 710; max++) {
      const out = truncateUtf8(text, max)
      expect(out).not.toContain("\uFFFD")
      check(text, max, out)
    }
  })

  it("[S9] inline clipping keeps one line, fits the bound and ends in an ellipsis when cut", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 200, size: "max" }), fc.integer({ min: 0, max: 300 }), (input, maxBytes) => {
        const out = clipInline(input, maxBytes)
        expect(utf8Length(out)).toBeLessThanOrEqual(maxBytes)
        expect(out).not.toMatch(/[\n\r\t]/)
        if (!input.includes("\uFFFD")) expect(out).not.toContain("\uFFFD")
        if (out.endsWith("…") && !input.replace(/\s+/g, " ").trim().endsWith("…")) {
          expect(input.replace(/\s+/g, " ").trim().startsWith(out.slice(0, -1))).toBe(true)
        }
      })
    )
  })
})

describe("Instructions: memory, bootstrap, profile and harness sections", () => {
  it("[S9] with memory tools, MEMORY.md is a pointer in the collaboration instructions, never raw content", () => {
    const c = ctx()
    const out = buildTurnInstructions(c)
    expect(out.collaborationDeveloperInstructions).toContain("## Memory")
    expect(out.collaborationDeveloperInstructions).toContain("MEMORY.md")
    expect(everything(c)).not.toContain("MEMORY-SENTINEL")
    expect(out.extraInput).toEqual([])
    // an active BOOTSTRAP.md rides with the turn-scoped instructions in this case
    expect(fileContent(out.collaborationDeveloperInstructions ?? "", "BOOTSTRAP.md")).toBe(BOOTSTRAP)
  })

  it("[S9] without memory tools, BOOTSTRAP.md and the full MEMORY.md are plain text items of the turn input, in that order", () => {
    const c = withTools(ctx(), { memoryToolsAvailable: false })
    const out = buildTurnInstructions(c)
    expect(out.extraInput).toHaveLength(2)
    const [bootstrap, memory] = out.extraInput
    expect(bootstrap?.type).toBe("text")
    expect(memory?.type).toBe("text")
    expect(bootstrap?.type === "text" && fileContent(bootstrap.text, "BOOTSTRAP.md")).toBe(BOOTSTRAP)
    expect(memory?.type === "text" && fileContent(memory.text, "MEMORY.md")).toBe(MEMORY)
    expect(out.collaborationDeveloperInstructions).toBeUndefined()
    expect(out.threadStart.developerInstructions).not.toContain("MEMORY-SENTINEL")
    // the prompt goes after them
    expect(turnInput(out, "hello").map((i) => (i.type === "text" ? i.text : ""))).toEqual([
      expect.stringContaining("BOOTSTRAP-SENTINEL"),
      expect.stringContaining("MEMORY-SENTINEL"),
      "hello"
    ])
  })

  it("[S9] MEMORY.md and BOOTSTRAP.md are bounded", () => {
    const c = withTools(ctx({ workspace: { memoryMd: "m".repeat(200_000), bootstrapMd: "b".repeat(200_000) } }), {
      memoryToolsAvailable: false
    })
    const [bootstrap, memory] = buildTurnInstructions(c).extraInput
    const b = bootstrap?.type === "text" ? fileContent(bootstrap.text, "BOOTSTRAP.md") ?? "" : ""
    const m = memory?.type === "text" ? fileContent(memory.text, "MEMORY.md") ?? "" : ""
    expect(utf8Length(b)).toBeLessThanOrEqual(BOOTSTRAP_MD_MAX_BYTES)
    expect(utf8Length(m)).toBeLessThanOrEqual(MEMORY_MD_MAX_BYTES)
    expect(markerOf(b)?.[2]).toBe("200000")
    expect(markerOf(m)?.[2]).toBe("200000")
  })

  it("[S8][S9] internal turns get no memory, bootstrap or skills", () => {
    for (const turnKind of INTERNAL_TURN_KINDS) {
      for (const memoryToolsAvailable of [true, false]) {
        const c = withTools(ctx({ turnKind, skills: [{ name: "pdf", description: "d", path: "/p" }] }), { memoryToolsAvailable })
        const out = buildTurnInstructions(c)
        expect(out.extraInput).toEqual([])
        expect(out.collaborationDeveloperInstructions).toBeUndefined()
        expect(everything(c)).not.toMatch(/MEMORY-SENTINEL|BOOTSTRAP-SENTINEL/)
      }
    }
  })

  it("[S9][S11] developer instructions cover delivery, the openclaw and openclaw_direct namespaces, delegation, adapter context and profile files", () => {
    const c = withTools(
      ctx({ adapterContext: "Telegram group 'ops'; replies are threaded. ADAPTER-SENTINEL" }),
      { dynamicToolNames: ["web_search", "sessions_spawn"], sessionsYieldAvailable: true }
    )
    const dev = buildTurnInstructions(c).threadStart.developerInstructions ?? ""
    expect(dev).toContain("## Replies")
    expect(dev).toContain("`openclaw` namespace")
    expect(dev).toContain("In `openclaw`: web_search, sessions_spawn.")
    expect(dev).toContain("In `openclaw_direct`: sessions_yield.")
    expect(dev).toContain("never from nested code execution")
    expect(dev).toContain("## Delegation")
    expect(dev).toContain("ADAPTER-SENTINEL")
    expect(fileContent(dev, "SOUL.md")).toContain("SOUL-SENTINEL")
    // the runtime sections come before the workspace files
    expect(dev.indexOf("## Replies")).toBeLessThan(dev.indexOf("## Workspace profile"))
  })

  it("[S9] no delegation section without session tools, no tool section on a tool-disabled turn", () => {
    expect(buildTurnInstructions(ctx()).threadStart.developerInstructions).not.toContain("## Delegation")
    const disabled = withTools(ctx({ turnKind: "toolDisabled" }), { sessionsYieldAvailable: true, messageToolMode: true })
    const dev = buildTurnInstructions(disabled).threadStart.developerInstructions ?? ""
    expect(dev).toContain("## Replies")
    expect(dev).not.toMatch(/Gateway tools|Delegation|sessions_yield|message\(action/)
  })

  it("[S9] profile files are bounded per file, in count and in total, with visible notes", () => {
    const files = Array.from({ length: PROFILE_FILES_MAX_COUNT + 3 }, (_, i) => ({ name: `P${i}.md`, content: `${i}`.repeat(20_000) }))
    const dev = buildTurnInstructions(ctx({ workspace: { profileFiles: files } })).threadStart.developerInstructions ?? ""
    const p0 = fileContent(dev, "P0.md") ?? ""
    expect(utf8Length(p0)).toBeLessThanOrEqual(PROFILE_FILE_MAX_BYTES)
    expect(markerOf(p0)?.[2]).toBe("20000")
    const included = files.map((f) => fileContent(dev, f.name)).filter((x): x is string => x !== undefined)
    expect(included.length).toBeLessThan(PROFILE_FILES_MAX_COUNT)
    expect(included.reduce((n, x) => n + utf8Length(x), 0)).toBeLessThanOrEqual(PROFILE_FILES_TOTAL_MAX_BYTES)
    expect(dev).toMatch(/omitted: profile files exceed/)
    expect(dev).toContain(`3 more profile files omitted`)
  })

  it("[S9] the total developer instructions never exceed DEVELOPER_INSTRUCTIONS_MAX_BYTES", () => {
    const big = "x".repeat(500_000)
    const c = ctx({
      policyRestricted: true,
      adapterContext: big,
      workspace: {
        agentsMd: big,
        profileFiles: Array.from({ length: 8 }, (_, i) => ({ name: `P${i}.md`, content: big }))
      },
      tools: {
        dynamicToolNames: Array.from({ length: 500 }, (_, i) => `tool_${i}_${"n".repeat(80)}`),
        memoryToolsAvailable: true,
        sessionsYieldAvailable: true,
        messageToolMode: true
      }
    })
    const dev = buildTurnInstructions(c).threadStart.developerInstructions ?? ""
    expect(utf8Length(dev)).toBeLessThanOrEqual(DEVELOPER_INSTRUCTIONS_MAX_BYTES)
    expect(markerOf(dev)).not.toBeNull()
    expect(dev).toContain("and 436 more")
    expect(dev).toContain("## Waiting for child sessions")
  })
})

describe("Instructions: sessions_yield and visible replies", () => {
  it("[S10] sessions_yield guidance appears only when the tool exists: end the turn, same-turn wait only when blocked, never poll", () => {
    const off = buildTurnInstructions(ctx()).threadStart.developerInstructions ?? ""
    expect(off).not.toContain("sessions_yield")
    const on = buildTurnInstructions(withTools(ctx(), { sessionsYieldAvailable: true })).threadStart.developerInstructions ?? ""
    expect(on).toContain("call sessions_yield to end this turn")
    expect(on).toContain("wait_agent")
    expect(on).toMatch(/only when your very next step cannot proceed/)
    expect(on).toMatch(/Never poll/)
    expect(on).toContain("## Delegation")
  })

  it("[S18] automatic delivery: the final reply is posted to the source channel", () => {
    const dev = buildTurnInstructions(ctx()).threadStart.developerInstructions ?? ""
    expect(dev).toContain("on webchat")
    expect(dev).toContain("posted there automatically")
    expect(dev).not.toContain("private")
  })

  it("[S18] message_tool mode: only message(action=\"send\") is visible", () => {
    const c = withTools(ctx({ delivery: { channel: "telegram", visibleReplies: "message_tool" } }), { messageToolMode: true })
    const dev = buildTurnInstructions(c).threadStart.developerInstructions ?? ""
    expect(dev).toContain("on telegram")
    expect(dev).toContain("final assistant message is private")
    expect(dev).toContain(`Only message(action="send") is visible to the user`)
    const noTool = buildTurnInstructions(ctx({ delivery: { channel: "telegram", visibleReplies: "message_tool" } }))
    expect(noTool.threadStart.developerInstructions).toContain("nothing you write reaches the user")
  })
})

describe("Instructions: heartbeats, skills and Default mode", () => {
  it("[S19] heartbeat guidance is a collaboration instruction on heartbeat turns only", () => {
    const hb = buildTurnInstructions(ctx({ turnKind: "heartbeat" }))
    expect(hb.collaborationDeveloperInstructions).toContain("## Heartbeat")
    expect(hb.collaborationDeveloperInstructions).toContain("heartbeat_respond")
    expect(hb.threadStart.developerInstructions).not.toContain("## Heartbeat")
    for (const turnKind of ALL_KINDS.filter((k) => k !== "heartbeat")) {
      expect(buildTurnInstructions(ctx({ turnKind })).collaborationDeveloperInstructions ?? "").not.toContain("## Heartbeat")
    }
  })

  it("[S19] ordinary turns without skills have no collaboration instruction (Codex Default mode)", () => {
    const plain = withTools(ctx(), { memoryToolsAvailable: false })
    const out = buildTurnInstructions(plain)
    expect(out.collaborationDeveloperInstructions).toBeUndefined()
    expect(collaborationMode(out, { model: "gpt-5.5" })).toBeUndefined()
    const skilled = buildTurnInstructions({ ...plain, skills: [{ name: "pdf", description: "Read PDFs", path: "/s/pdf" }] })
    expect(skilled.collaborationDeveloperInstructions).toContain("- pdf: Read PDFs (/s/pdf)")
    expect(collaborationMode(skilled, { model: "gpt-5.5", reasoningEffort: "high" })).toEqual({
      mode: "default",
      settings: { model: "gpt-5.5", reasoning_effort: "high", developer_instructions: skilled.collaborationDeveloperInstructions }
    })
  })

  it("[S9] the skill catalog is bounded in entries and description length", () => {
    const skills = Array.from({ length: SKILL_CATALOG_MAX_ENTRIES + 7 }, (_, i) => ({
      name: `skill-${i}`,
      description: "Does a thing.\nIn detail: ".repeat(100),
      path: `/skills/skill-${i}/SKILL.md`
    }))
    const collab = buildTurnInstructions(withTools(ctx({ skills }), { memoryToolsAvailable: false })).collaborationDeveloperInstructions ?? ""
    const entries = collab.split("\n").filter((l) => l.startsWith("- skill-"))
    expect(entries).toHaveLength(SKILL_CATALOG_MAX_ENTRIES)
    expect(collab).toContain("(7 more skills not listed)")
    const description = entries[0]?.slice("- skill-0: ".length, entries[0].lastIndexOf(" (")) ?? ""
    expect(utf8Length(description)).toBeLessThanOrEqual(SKILL_DESCRIPTION_MAX_BYTES)
    expect(description.endsWith("…")).toBe(true)
    expect(utf8Length(collab)).toBeLessThanOrEqual(COLLABORATION_INSTRUCTIONS_MAX_BYTES)
  })

  it("[S19] the cron scratch is appended to the heartbeat prompt when present, and bounded", () => {
    const hb = (cronScratch?: string) =>
      buildTurnInstructions(ctx({ turnKind: "heartbeat", ...(cronScratch !== undefined ? { heartbeat: { cronScratch } } : {}) }))
    expect(hb().promptSuffix).toBeUndefined()
    expect(hb("  \n").promptSuffix).toBeUndefined()
    const out = hb("09:00 check inbox\n12:00 standup notes")
    expect(out.promptSuffix).toBe("\n\nCron scratch from the heartbeat monitor:\n09:00 check inbox\n12:00 standup notes")
    const input = turnInput(out, "Heartbeat: read HEARTBEAT.md.")
    expect(input[input.length - 1]).toEqual({ type: "text", text: `Heartbeat: read HEARTBEAT.md.${out.promptSuffix}` })

    const big = hb("é".repeat(50_000)).promptSuffix ?? ""
    const scratch = big.slice(big.indexOf("monitor:\n") + "monitor:\n".length)
    expect(utf8Length(scratch)).toBeLessThanOrEqual(CRON_SCRATCH_MAX_BYTES)
    expect(markerOf(scratch)?.[2]).toBe("100000")
    // never on other turns
    expect(buildTurnInstructions(ctx({ heartbeat: { cronScratch: "x" } })).promptSuffix).toBeUndefined()
  })
})

describe("Instructions: readWorkspace", () => {
  const tempDir = Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "instructions-test-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

  it.scoped("[S8][S9] reads the workspace files with their bounds applied; missing, blank and unreadable files are absent", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const huge = "ü".repeat(600_000) // 1.2 MB, 2-byte characters
      fs.writeFileSync(path.join(dir, "AGENTS.md"), huge)
      fs.writeFileSync(path.join(dir, "MEMORY.md"), MEMORY)
      fs.writeFileSync(path.join(dir, "SOUL.md"), "Calm. SOUL")
      fs.writeFileSync(path.join(dir, "USER.md"), "  \n\n")
      fs.mkdirSync(path.join(dir, "IDENTITY.md")) // a directory: unreadable, not fatal
      fs.writeFileSync(path.join(dir, "TOOLS.md"), "t".repeat(PROFILE_FILE_MAX_BYTES + 1))

      const ws = yield* readWorkspace(dir)
      expect(ws.bootstrapMd).toBeUndefined()
      expect(ws.memoryMd).toBe(MEMORY)
      expect(utf8Length(ws.agentsMd ?? "")).toBeLessThanOrEqual(AGENTS_MD_MAX_BYTES)
      expect(ws.agentsMd).not.toContain("\uFFFD")
      expect(markerOf(ws.agentsMd ?? "")?.[2]).toBe("1200000")
      expect(ws.profileFiles?.map((f) => f.name)).toEqual(["SOUL.md", "TOOLS.md"])
      const tools = ws.profileFiles?.[1]?.content ?? ""
      expect(utf8Length(tools)).toBeLessThanOrEqual(PROFILE_FILE_MAX_BYTES)
      expect(markerOf(tools)?.[2]).toBe(String(PROFILE_FILE_MAX_BYTES + 1))

      // what was read feeds the builder unchanged (already within bounds)
      const out = buildTurnInstructions(ctx({ policyRestricted: true, workspace: ws }))
      expect(fileContent(out.threadStart.developerInstructions ?? "", "AGENTS.md")).toBe(ws.agentsMd)

      expect(yield* readWorkspace(path.join(dir, "does-not-exist"))).toEqual({})
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
