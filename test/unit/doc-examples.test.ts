// The public surface's doc comments: every service and port an app uses carries an `@example`, and every example
// compiles, strictly, against the package as an app imports it ("codex-harness", "codex-harness/testing",
// "codex-harness/layers/*", resolved to the built declarations in dist/: `npm test` builds first). `npm run docs` runs
// this before it writes the API reference, so the reference never shows an example that does not compile.
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"

const root = path.resolve(import.meta.dirname, "../..")

/** where the public declarations live (src/api re-exports them from these) */
const publicSources = [
  "src/harness/Harness.ts",
  "src/ports",
  "src/turn/TurnContext.ts",
  "src/approvals/HookRelay.ts",
  "src/testing/ScriptedModel.ts",
  "src/testing/ScriptedReplies.ts",
  "src/testing/RecordingDelivery.ts",
  "src/testing/mock/Server.ts",
  "layers/Live.ts",
  "layers/Test.ts"
]

const files = publicSources.flatMap((entry) => {
  const full = path.join(root, entry)
  return fs.statSync(full).isDirectory()
    ? fs.readdirSync(full).filter((f) => f.endsWith(".ts")).map((f) => path.join(entry, f))
    : [entry]
})

interface Example {
  readonly file: string
  readonly line: number
  readonly code: string
}

/** the ```ts blocks after an @example tag in the file's doc comments, with the leading " * " taken off */
const examplesOf = (file: string): ReadonlyArray<Example> => {
  const text = fs.readFileSync(path.join(root, file), "utf8")
  const found: Array<Example> = []
  for (const match of text.matchAll(/@example\s*\n\s*\*\s*```ts\n([\s\S]*?)\n\s*\*\s*```/g)) {
    const code = match[1]!.split("\n").map((line) => line.replace(/^\s*\* ?/, "")).join("\n")
    found.push({ file, line: text.slice(0, match.index).split("\n").length, code })
  }
  return found
}

const examples = files.flatMap(examplesOf)

/** the services and ports an app uses: each declaration's doc comment must carry an example */
const mustHaveExample: ReadonlyArray<readonly [string, RegExp]> = [
  ["src/harness/Harness.ts", /export interface HarnessService\b/],
  ["src/ports/Delivery.ts", /export class Delivery\b/],
  ["src/ports/ApprovalPrompts.ts", /export class ApprovalPrompts\b/],
  ["src/ports/Questions.ts", /export class Questions\b/],
  ["src/ports/DynamicTools.ts", /export class DynamicTools\b/],
  ["src/ports/ToolCallHooks.ts", /export class ToolCallHooks\b/],
  ["src/ports/PluginHooks.ts", /export class PluginHooks\b/],
  ["src/ports/HookPolicy.ts", /export class HookPolicy\b/],
  ["src/ports/ToolResultPersistence.ts", /export class ToolResultPersistence\b/],
  ["src/ports/ContextEngine.ts", /export class ContextEngine\b/],
  ["src/turn/TurnContext.ts", /export class TurnContexts\b/],
  ["src/approvals/HookRelay.ts", /export class HookRelayConfig\b/],
  ["src/testing/ScriptedModel.ts", /export const make\b/],
  ["src/testing/ScriptedReplies.ts", /export interface ScriptRule\b/],
  ["src/testing/RecordingDelivery.ts", /export class RecordingDelivery\b/],
  ["src/testing/mock/Server.ts", /export class MockAppServer\b/],
  ["layers/Live.ts", /export const layer\b/],
  ["layers/Test.ts", /export const layer\b/]
]

describe("the public surface's doc comments", () => {
  it("every exported service and port has a doc comment with an example", () => {
    const missing = mustHaveExample.filter(([file, declaration]) => {
      const text = fs.readFileSync(path.join(root, file), "utf8")
      const at = text.search(declaration)
      if (at < 0) return true
      const before = text.slice(0, at)
      const comment = before.slice(before.lastIndexOf("/**"))
      return !comment.includes("@example") || comment.includes("*/\n\n")
    }).map(([file, declaration]) => `${file}: ${declaration.source}`)
    expect(missing).toEqual([])
  })

  it("every example compiles strictly against the package as an app imports it", () => {
    expect(examples.length).toBeGreaterThanOrEqual(mustHaveExample.length)
    const dir = path.join(root, "test-artifacts", "doc-examples")
    fs.rmSync(dir, { recursive: true, force: true })
    fs.mkdirSync(dir, { recursive: true })
    const names = examples.map((example, i) => {
      const name = path.join(dir, `example-${i}.ts`)
      // each example is a module of its own; its unused names are fine
      fs.writeFileSync(name, `${example.code}\nexport {}\n`)
      return name
    })
    const dist = (file: string) => [path.join(root, "dist", file)]
    const program = ts.createProgram(names, {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      types: ["node"],
      strict: true,
      exactOptionalPropertyTypes: true,
      noEmit: true,
      skipLibCheck: true,
      paths: {
        "codex-harness": dist("src/index.d.ts"),
        "codex-harness/testing": dist("src/testing/index.d.ts"),
        "codex-harness/layers/Live": dist("layers/Live.d.ts"),
        "codex-harness/layers/Test": dist("layers/Test.d.ts")
      }
    })
    const problems = ts.getPreEmitDiagnostics(program).map((d) => {
      const index = d.file === undefined ? -1 : names.indexOf(d.file.fileName)
      const where = index < 0 ? d.file?.fileName ?? "" : `${examples[index]!.file}:${examples[index]!.line}`
      const line = d.file !== undefined && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0
      return `${where} (example line ${line}): ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`
    })
    expect(problems).toEqual([])
  })
})
