// Owns the generated side as files: running the pinned binary's `app-server generate-json-schema` into a scoped temp
// dir, and loading that directory into one flat map of definitions plus the binary's own method tables (client
// requests, server notifications, server requests -> params definition).
import { Duration, Effect, Schema } from "effect"
import { execFile } from "node:child_process"
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { CodexCommand } from "../../src/appserver/CodexBinary.js"
import { isObj, type JsonSchema, type Obj, refName } from "./schema-walk.js"

export interface GeneratedSchema {
  /** every named definition, flattened into one map; all `$ref`s in the generated files point into it */
  readonly definitions: Readonly<Record<string, JsonSchema>>
  /** client request method -> definition name of its params (undefined when the variant has no params ref) */
  readonly clientRequests: Readonly<Record<string, string | undefined>>
  /** server notification method -> definition name of its params */
  readonly serverNotifications: Readonly<Record<string, string | undefined>>
  /** server request method -> definition name of its params */
  readonly serverRequests: Readonly<Record<string, string | undefined>>
}

export class SchemaGenerationFailed extends Schema.TaggedError<SchemaGenerationFailed>()("SchemaGenerationFailed", {
  command: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `could not generate the app-server JSON schema with ${this.command}: ${this.reason}`
  }
}

export class GeneratedSchemaInvalid extends Schema.TaggedError<GeneratedSchemaInvalid>()("GeneratedSchemaInvalid", {
  file: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `generated schema file ${this.file} is unusable: ${this.reason}`
  }
}

const firstLine = (s: string): string => s.split("\n").find((l) => l.trim() !== "")?.trim() ?? ""

// ---- loading the generated directory ----

const readJson = (file: string): Effect.Effect<Obj, GeneratedSchemaInvalid> =>
  Effect.tryPromise({
    try: () => readFile(file, "utf8"),
    catch: (e) => new GeneratedSchemaInvalid({ file, reason: firstLine(String(e)) })
  }).pipe(
    Effect.flatMap((text) =>
      Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (e) => new GeneratedSchemaInvalid({ file, reason: firstLine(String(e)) })
      })
    ),
    Effect.filterOrFail(isObj, () => new GeneratedSchemaInvalid({ file, reason: "not a JSON object" }))
  )

const jsonFiles = (dir: string): Effect.Effect<ReadonlyArray<string>, GeneratedSchemaInvalid> =>
  Effect.tryPromise({
    try: () => readdir(dir),
    catch: (e) => new GeneratedSchemaInvalid({ file: dir, reason: firstLine(String(e)) })
  }).pipe(Effect.map((files) => files.filter((f) => f.endsWith(".json")).sort()))

/** `oneOf` variants each pin `properties.method.enum[0]` and point `properties.params` at a definition. */
const methodTable = (
  file: string,
  root: Obj
): Effect.Effect<Record<string, string | undefined>, GeneratedSchemaInvalid> => {
  if (!Array.isArray(root.oneOf)) {
    return Effect.fail(new GeneratedSchemaInvalid({ file, reason: "no oneOf of methods" }))
  }
  const table: Record<string, string | undefined> = {}
  for (const variant of root.oneOf) {
    const props = isObj(variant) && isObj(variant.properties) ? variant.properties : undefined
    const method = props !== undefined && isObj(props.method) ? props.method : undefined
    const name = Array.isArray(method?.enum) ? method.enum[0] : method?.const
    if (typeof name !== "string") continue
    const params = props !== undefined && isObj(props.params) ? props.params : undefined
    table[name] = typeof params?.$ref === "string" ? refName(params.$ref) : undefined
  }
  return Effect.succeed(table)
}

const v2Bundle = "codex_app_server_protocol.v2.schemas.json"
const methodFiles = ["ClientRequest.json", "ServerNotification.json", "ServerRequest.json"] as const
const notRoots = new Set<string>([v2Bundle, "codex_app_server_protocol.schemas.json", ...methodFiles])

export const loadGenerated = (dir: string): Effect.Effect<GeneratedSchema, GeneratedSchemaInvalid> =>
  Effect.gen(function*() {
    const definitions: Record<string, JsonSchema> = {}
    // first writer wins; the files repeat shared definitions identically
    const add = (name: string, node: unknown) => {
      if (definitions[name] === undefined) definitions[name] = node
    }
    const addAll = (root: Obj) => {
      if (isObj(root.definitions)) for (const [k, v] of Object.entries(root.definitions)) add(k, v)
    }
    /** a root schema with its own local definitions, named by its title */
    const addRoot = (file: string, root: Obj) => {
      add(typeof root.title === "string" ? root.title : path.basename(file, ".json"), root)
      addAll(root)
    }
    // initialize lives only in v1/, each file a root schema with its own local definitions
    const v1Dir = path.join(dir, "v1")
    for (const f of yield* jsonFiles(v1Dir)) addRoot(f, yield* readJson(path.join(v1Dir, f)))
    addAll(yield* readJson(path.join(dir, v2Bundle)))
    const tables: Array<Record<string, string | undefined>> = []
    for (const f of methodFiles) {
      const file = path.join(dir, f)
      const root = yield* readJson(file)
      addAll(root)
      tables.push(yield* methodTable(file, root))
    }
    // server-request responses (CommandExecutionRequestApprovalResponse, ...) live only as top-level root files; read
    // last so that they only fill gaps
    for (const f of (yield* jsonFiles(dir)).filter((f) => !notRoots.has(f))) {
      addRoot(f, yield* readJson(path.join(dir, f)))
    }
    const [clientRequests = {}, serverNotifications = {}, serverRequests = {}] = tables
    return { definitions, clientRequests, serverNotifications, serverRequests }
  })

// ---- running the pinned binary ----

/** A fresh temp dir that the scope's finalizer removes. */
export const scopedTempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () => mkdtemp(path.join(os.tmpdir(), prefix)),
      catch: (e) => new SchemaGenerationFailed({ command: "mkdtemp", reason: firstLine(String(e)) })
    }),
    (dir) => Effect.tryPromise(() => rm(dir, { recursive: true, force: true })).pipe(Effect.ignore)
  )

export const generateSchema = (
  codex: CodexCommand,
  dir: string,
  timeout: Duration.DurationInput = "30 seconds"
): Effect.Effect<void, SchemaGenerationFailed> =>
  Effect.async<void, SchemaGenerationFailed>((resume, signal) => {
    const ms = Duration.toMillis(timeout)
    // --experimental: the harness initializes with experimentalApi and uses its fields (dynamicTools, collaborationMode)
    const args = [...codex.prefixArgs, "app-server", "generate-json-schema", "--experimental", "--out", dir]
    execFile(codex.command, args, { timeout: ms, signal, windowsHide: true }, (error, _stdout, stderr) => {
      if (error === null) return resume(Effect.void)
      const reason = error.killed && !signal.aborted
        ? `timed out after ${ms} ms`
        : firstLine(String(stderr)) || firstLine(error.message)
      resume(Effect.fail(new SchemaGenerationFailed({ command: codex.command, reason })))
    })
  })
