// The MockAppServer's replay mode: the n-th app-server the harness starts plays the n-th connection of a wire recording
// (WireRecording.ts). It answers each request with the recorded result, sends the recorded notifications and server
// requests in the recorded order, and checks that what the harness sends (requests, notifications, answers to server
// requests) is what was recorded (ReplayMatch.ts says what is compared). Between two recorded app-server messages the
// harness's own messages may come in any order (they were not ordered by anything the app-server said); everything
// else keeps the recorded order. The first difference stops the replay: the app-server exits with it on stderr (so
// nothing waits on an answer that will not come) and `verify` fails with it as a typed error.
import { Effect, Queue, Schema, type Scope } from "effect"
import { SpawnFailed } from "../../appserver/errors.js"
import { answeredByPeople, maskStrings } from "../../appserver/Redaction.js"
import type { ExitInfo, TransportOptions } from "../../appserver/Transport.js"
import * as WireRecording from "../../appserver/WireRecording.js"
import type { Recording, Roots } from "../../appserver/WireRecording.js"
import { type ClientMessage, idKey } from "./ClientMessages.js"
import { type Bindings, compare, expand, show } from "./ReplayMatch.js"

/** The harness did not send what the recording has (or sent what it has not), first difference only. */
export class ReplayMismatch extends Schema.TaggedError<ReplayMismatch>()("ReplayMismatch", {
  /** the app-server connection, 1-based, in the order the harness started them */
  conn: Schema.Int,
  /** the method of the message that differs (for an answer: of the server request it answers) */
  method: Schema.String,
  /** the first differing field, from the message's top (`params.input[0].text`); empty for the message as a whole */
  path: Schema.String,
  recorded: Schema.String,
  got: Schema.String
}) {
  override get message() {
    return `${this.method}: ${this.path === "" ? "" : `${this.path}: `}recorded ${this.recorded} got ${this.got}`
  }
}

/** What a test gives the mock to replay: the recording, and the harness's own directories when they are known. */
export interface ReplayScript {
  readonly recording: Recording
  /** otherwise learnt from the first message that has them (ReplayMatch.ts) */
  readonly roots?: Pick<Roots, "cwd" | "stateDir"> | undefined
}

/** The replay's state across the mock's spawns. */
export interface ReplayState {
  readonly connections: ReadonlyArray<ReadonlyArray<WireRecording.Entry>>
  /** per connection, the indexes of its harness entries the harness has sent */
  readonly sent: ReadonlyArray<Set<number>>
  /** the harness's directories, as given or learnt; shared by every connection */
  readonly learnt: Map<"cwd" | "stateDir", string>
  /** connections started so far */
  started: number
  mismatch: ReplayMismatch | undefined
}

export const makeState = (script: ReplayScript): ReplayState => {
  const connections: Array<Array<WireRecording.Entry>> = []
  for (const entry of script.recording.entries) (connections[entry.conn - 1] ??= []).push(entry)
  const learnt = new Map<"cwd" | "stateDir", string>()
  if (script.roots?.cwd !== undefined) learnt.set("cwd", script.roots.cwd)
  if (script.roots?.stateDir !== undefined) learnt.set("stateDir", script.roots.stateDir)
  return { connections: Array.from(connections, (c) => c ?? []), sent: Array.from(connections, () => new Set()), learnt, started: 0, mismatch: undefined }
}

/**
 * The connection the next spawn plays (1-based; spawns that failed before it are not counted, as the recorder never
 * saw them), or SpawnFailed saying why there is none: an earlier mismatch, or a recording with fewer connections.
 */
export const admitSpawn = (state: ReplayState): Effect.Effect<number, SpawnFailed> => {
  const refuse = (reason: string) => Effect.fail(new SpawnFailed({ command: "mock codex app-server (replay)", reason }))
  if (state.mismatch !== undefined) return refuse(state.mismatch.message)
  const conn = ++state.started
  if (conn <= state.connections.length) return Effect.succeed(conn)
  state.mismatch = new ReplayMismatch({ conn, method: `app-server #${conn}`, path: "", recorded: "nothing", got: "a start" })
  return refuse(state.mismatch.message)
}

type Kind = "request" | "notification" | "answer"

const kindOf = (message: Record<string, unknown>): Kind =>
  typeof message.method !== "string" ? "answer" : "id" in message ? "request" : "notification"

const withArticle = (kind: Kind) => (kind === "answer" ? "an answer" : `a ${kind}`)

/** The first recorded harness message the harness never sent: what `verify` reports when nothing else differed. */
export const verify = (state: ReplayState): Effect.Effect<void, ReplayMismatch> =>
  Effect.suspend(() => {
    if (state.mismatch !== undefined) return Effect.fail(state.mismatch)
    for (const [i, entries] of state.connections.entries()) {
      const missing = entries.findIndex((e, at) => e.from === "harness" && "message" in e && !state.sent[i]!.has(at))
      if (missing === -1) continue
      const entry = entries[missing] as WireRecording.MessageEntry
      const kind = kindOf(entry.message)
      const method = kind === "answer" ? answeredMethod(entries, entry.message.id) : String(entry.message.method)
      return Effect.fail(new ReplayMismatch({ conn: i + 1, method, path: "", recorded: withArticle(kind), got: "nothing" }))
    }
    return Effect.void
  })

/** the method of the recorded server request an answer with this id answers */
const answeredMethod = (entries: ReadonlyArray<WireRecording.Entry>, id: unknown): string => {
  for (const e of entries) {
    if (e.from === "app-server" && "message" in e && e.message.id === id && typeof e.message.method === "string") return e.message.method
  }
  return "(answer)"
}

/** what the replay does to the peer it plays through */
export interface ReplayPeerIo {
  readonly writeLine: (line: string) => Effect.Effect<void>
  readonly die: (info: ExitInfo) => Effect.Effect<void>
  readonly setStderr: (text: string) => Effect.Effect<void>
  readonly inputEnded: () => boolean
}

export interface Replayer {
  /** a message the harness sent */
  readonly received: (message: ClientMessage) => Effect.Effect<void>
  /** the harness closed its side */
  readonly closed: Effect.Effect<void>
  /** plays the connection until the recording or the peer ends; run it on the peer's own fiber */
  readonly run: Effect.Effect<void>
}

type FromHarness = { readonly _tag: "Message"; readonly message: ClientMessage } | { readonly _tag: "Close" }

export const makeReplayer = (
  state: ReplayState,
  conn: number,
  options: TransportOptions,
  io: ReplayPeerIo
): Effect.Effect<Replayer, never, Scope.Scope> =>
  Effect.gen(function* () {
    const entries = state.connections[conn - 1] ?? []
    const sent = state.sent[conn - 1] ?? new Set<number>()
    const inbox = yield* Effect.acquireRelease(Queue.bounded<FromHarness>(1_024), Queue.shutdown)
    // masks as the recorder does, without placeholders: the harness's paths are compared as they are
    const keep = WireRecording.keeper(WireRecording.secretsFor(options), {})
    // this machine's and this spawn's directories are known from the start; the harness's own once seen (or given)
    const machine = WireRecording.rootsFor({}, options)
    const known = WireRecording.rootNames.flatMap((name) => {
      const value = machine[name]
      return value !== undefined && value !== "" ? [[name, value] as const] : []
    })
    let bindings: Bindings = new Map([...known, ...state.learnt])
    /** the harness's request ids, by the recorded id of the same request */
    const requestIds = new Map<string, unknown>()

    const stop = (mismatch: ReplayMismatch) =>
      Effect.suspend(() => {
        state.mismatch ??= mismatch
        return Effect.zipRight(io.setStderr(mismatch.message), io.die({ exitCode: 1, signal: null }))
      })

    const emit = (entry: WireRecording.Entry): Effect.Effect<void> => {
      if ("message" in entry) {
        const message = expand(entry.message, bindings) as Record<string, unknown>
        // an answer goes to the id the harness gave the request; a server request keeps its recorded id
        const answer = kindOf(message) === "answer" && requestIds.has(idKey(message.id as string | number))
        const live = answer ? { ...message, id: requestIds.get(idKey(message.id as string | number)) } : message
        return io.writeLine(JSON.stringify(live))
      }
      if ("line" in entry) return io.writeLine(String(expand(entry.line, bindings)))
      if ("oversized" in entry) return io.writeLine(" ".repeat(entry.oversized + 1))
      if ("event" in entry && entry.event === "exit") {
        return io.inputEnded() ? Effect.void : io.die({ exitCode: entry.exitCode, signal: entry.signal })
      }
      return Effect.void
    }

    /** the harness's message against one recorded entry: the new bindings, or how it differs */
    const against = (got: ClientMessage, entry: WireRecording.Entry) => {
      if (!("message" in entry)) return undefined
      const recorded = entry.message
      const kind = kindOf(recorded)
      if (got._tag === "Request" && kind === "request" && recorded.method === got.method) {
        return { method: got.method, match: compare(recorded.params, got.params, bindings, "params") }
      }
      if (got._tag === "Notification" && kind === "notification" && recorded.method === got.method) {
        return { method: got.method, match: compare(recorded.params, got.params, bindings, "params") }
      }
      if (got._tag === "Response" && kind === "answer" && recorded.id === got.id) {
        const method = answeredMethod(entries, recorded.id)
        const match = got.error !== undefined
          ? compare({ error: recorded.error }, { error: got.error }, bindings)
          : compare({ result: recorded.result }, { result: got.result }, bindings)
        return { method, match }
      }
      return undefined
    }

    /** the harness's message with its secrets masked as the recorder masks them, so a masked field compares equal */
    const redacted = (message: ClientMessage): ClientMessage => {
      const masked = (key: string, value: unknown) => keep.message({ [key]: value })[key]
      switch (message._tag) {
        case "Invalid":
          return message
        case "Request":
        case "Notification":
          return { ...message, params: masked("params", message.params) }
        case "Response":
          if (message.error !== undefined) return { ...message, error: masked("error", message.error) as typeof message.error }
          // people's answers were recorded with every string masked
          return answeredByPeople.has(answeredMethod(entries, message.id))
            ? { ...message, result: maskStrings(message.result) }
            : { ...message, result: masked("result", message.result) }
      }
    }

    /** matches one thing the harness did against the open group of recorded harness entries; a mismatch if none fits */
    const take = (event: FromHarness, group: Array<number>): ReplayMismatch | undefined => {
      if (event._tag === "Close") {
        const at = group.findIndex((i) => "event" in entries[i]!)
        if (at !== -1) group.splice(at, 1)
        return undefined
      }
      const got = redacted(event.message)
      let first: { readonly method: string; readonly path: string; readonly recorded: string; readonly got: string } | undefined
      for (const [at, index] of group.entries()) {
        const tried = against(got, entries[index]!)
        if (tried === undefined) continue
        if (tried.match._tag === "Same") {
          bindings = tried.match.bindings
          for (const name of ["cwd", "stateDir"] as const) {
            const value = bindings.get(name)
            if (value !== undefined && !state.learnt.has(name)) state.learnt.set(name, value)
          }
          const recorded = (entries[index] as WireRecording.MessageEntry).message
          if (got._tag === "Request") requestIds.set(idKey(recorded.id as string | number), got.id)
          sent.add(index)
          group.splice(at, 1)
          return undefined
        }
        first ??= { method: tried.method, ...tried.match.difference }
      }
      if (first !== undefined) return new ReplayMismatch({ conn, ...first })
      return unexpected(got, group)
    }

    /** nothing recorded here is of this kind and method: named against what the recording has next */
    const unexpected = (got: ClientMessage, group: ReadonlyArray<number>): ReplayMismatch => {
      const method = got._tag === "Request" || got._tag === "Notification"
        ? got.method
        : got._tag === "Response"
        ? answeredMethod(entries, got.id)
        : "(not JSON-RPC)"
      const next = group.map((i) => entries[i]!).find((e): e is WireRecording.MessageEntry => "message" in e)
      if (next === undefined) {
        const what = got._tag === "Invalid" ? show(got.line) : withArticle(got._tag === "Response" ? "answer" : got._tag === "Request" ? "request" : "notification")
        return new ReplayMismatch({ conn, method, path: "", recorded: "nothing", got: what })
      }
      const want = next.message
      const wantMethod = kindOf(want) === "answer" ? answeredMethod(entries, want.id) : String(want.method)
      return new ReplayMismatch({ conn, method: wantMethod, path: "method", recorded: show(wantMethod), got: show(method) })
    }

    const run = Effect.gen(function* () {
      let cursor = 0
      while (cursor < entries.length) {
        // what the app-server said next, up to the next thing the harness did
        while (cursor < entries.length && entries[cursor]!.from === "app-server") yield* emit(entries[cursor++]!)
        const group: Array<number> = []
        while (cursor < entries.length && entries[cursor]!.from === "harness") group.push(cursor++)
        while (group.length > 0) {
          const mismatch = take(yield* Queue.take(inbox), group)
          if (mismatch !== undefined) return yield* stop(mismatch)
        }
      }
      // the recording of this connection is over: anything more the harness sends was not in it
      while (true) {
        const event = yield* Queue.take(inbox)
        if (event._tag === "Message") return yield* stop(unexpected(redacted(event.message), []))
      }
    })

    return {
      received: (message) => Queue.offer(inbox, { _tag: "Message", message }).pipe(Effect.asVoid),
      closed: Queue.offer(inbox, { _tag: "Close" }).pipe(Effect.asVoid),
      run
    } satisfies Replayer
  })
