// The pure parts of a turn's context: skill front matter, the skills directory, merging the port's context with the
// request's, and what the instructions builder makes of turn kinds, namespaces, memory modes and the compatibility route.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { servedTools } from "../../src/threads/ThreadSetup.js"
import { tool } from "../../src/ports/DynamicTools.js"
import { buildTurnInstructions, type InstructionContext } from "../../src/turn/Instructions.js"
import { frontMatter, readSkills } from "../../src/turn/Skills.js"
import { mergeTurnContext } from "../../src/turn/TurnContext.js"

const base: InstructionContext = {
  route: "native",
  turnKind: "user",
  policyRestricted: false,
  workspace: { memoryMd: "MEMORY-TEXT", bootstrapMd: "BOOTSTRAP-TEXT" },
  tools: { dynamicToolNames: ["lookup"], directToolNames: ["message", "ticket"], memoryToolsAvailable: false, sessionsYieldAvailable: false, messageToolMode: true },
  delivery: { channel: "chat", visibleReplies: "message_tool" }
}

describe("turn context", () => {
  it("skill front matter: name and description from the leading --- block, quoted or not; nothing without one", () => {
    expect(frontMatter("---\nname: release-notes\ndescription: \"Write notes\"\nother: x\n---\nbody")).toEqual({
      name: "release-notes",
      description: "Write notes"
    })
    expect(frontMatter("name: x\ndescription: y")).toEqual({})
    expect(frontMatter("---\r\nname: 'a'\r\n---\r\ndescription: after the block\r\n")).toEqual({ name: "a" })
  })

  it.effect("a skills directory lists its subdirectories with a complete SKILL.md, by name; a missing directory has none", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "skills-"))
      const skill = (name: string, text: string) => {
        fs.mkdirSync(path.join(dir, name))
        fs.writeFileSync(path.join(dir, name, "SKILL.md"), text)
      }
      skill("zeta", "---\nname: zeta\ndescription: last\n---\n")
      skill("alpha", "---\nname: alpha\ndescription: first\n---\n")
      skill("nameless", "---\ndescription: no name\n---\n")
      fs.mkdirSync(path.join(dir, "empty"))
      fs.writeFileSync(path.join(dir, "README.md"), "not a skill")
      const skills = yield* readSkills(dir)
      expect(skills.map((s) => [s.name, s.description, s.path])).toEqual([
        ["alpha", "first", path.join(dir, "alpha", "SKILL.md")],
        ["zeta", "last", path.join(dir, "zeta", "SKILL.md")]
      ])
      expect(yield* readSkills(path.join(dir, "absent"))).toEqual([])
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it("the request's fields win over the port's; an absent or undefined field keeps the port's", () => {
    expect(mergeTurnContext({ channel: "port", adapterContext: "A" }, { channel: "request", adapterContext: undefined })).toEqual({
      channel: "request",
      adapterContext: "A"
    })
    expect(mergeTurnContext({ channel: "port" }, undefined)).toEqual({ channel: "port" })
  })

  it("[S8] a message-only turn serves only `message`, a tool-disabled turn nothing", () => {
    const mk = (name: string) => tool({ name, description: name, input: Schema.Struct({}), handler: () => Effect.succeed("") })
    const tools = [mk("message"), mk("lookup")]
    expect(servedTools(tools, "user").map((t) => t.name)).toEqual(["message", "lookup"])
    expect(servedTools(tools, "messageOnly").map((t) => t.name)).toEqual(["message"])
    expect(servedTools(tools, "toolDisabled")).toEqual([])
  })

  it("[S11] the instructions place each tool in its namespace; a message-only turn keeps the message tool's guidance only", () => {
    const dev = buildTurnInstructions(base).threadStart.developerInstructions ?? ""
    expect(dev).toContain("In `openclaw`: lookup.")
    expect(dev).toContain("In `openclaw_direct`: message, ticket.")
    const messageOnly = buildTurnInstructions({ ...base, turnKind: "messageOnly" }).threadStart.developerInstructions ?? ""
    expect(messageOnly).toContain('message(action="send")')
    expect(messageOnly).not.toContain("## Gateway tools")
  })

  it("[S9] memory off: no pointer, no MEMORY.md or BOOTSTRAP.md input; memory tools by name in the pointer", () => {
    const off = buildTurnInstructions({ ...base, tools: { ...base.tools, memoryOff: true } })
    expect(off.extraInput).toEqual([])
    expect(off.collaborationDeveloperInstructions ?? "").not.toContain("## Memory")
    const tools = buildTurnInstructions({ ...base, tools: { ...base.tools, memoryToolsAvailable: true, memoryToolNames: ["memory_search", "memory_get"] } })
    expect(tools.collaborationDeveloperInstructions).toContain("search it with memory_search, memory_get.")
    expect(JSON.stringify(tools)).not.toContain("MEMORY-TEXT")
  })

  it("[S6] the compatibility route sends the gateway's prompt as base instructions and nothing of the harness's", () => {
    const compat = buildTurnInstructions({ ...base, route: "compatibility", systemPrompt: "GATEWAY" })
    expect(compat.threadStart).toEqual({ personality: "none", baseInstructions: "GATEWAY" })
    expect(compat.extraInput).toEqual([])
    expect(buildTurnInstructions({ ...base, route: "compatibility" }).threadStart).toEqual({ personality: "none" })
  })
})
