// An in-memory `codex app-server` for tests: a `Transport` whose spawns are scripted JSON-RPC peers, so the connection,
// the pool, the turn runner and the harness run against it unchanged. Each peer answers requests from handlers (defaults
// shaped like the real 0.171 messages), can notify, send server requests and raw lines, and can exit or crash. It records
// every message the client sent. It never touches a real process and never reads the clock for waiting: TestClock-safe.
import { Cause, Clock, Context, Deferred, Effect, Equal, Exit, Fiber, FiberId, FiberSet, Layer, Mailbox, Option, Schema, Scope } from "effect"
import type { RequestId } from "../../schemas/jsonrpc.js"
import { SpawnFailed } from "../appserver/errors.js"
import { type FramedLine, LineFramer } from "../appserver/LineFramer.js"
import {
  defaults as transportDefaults,
  type ExitInfo,
  Transport,
  type TransportHandle,
  type TransportOptions
} from "../appserver/Transport.js"

// ---- what the client sent, parsed ----

export interface ClientRequest {
  readonly _tag: "Request"
  /** the spawn number of the peer that received it (1-based) */
  readonly peer: number
  readonly id: RequestId
  readonly method: string
  readonly params: unknown
}
export interface ClientNotification {
  readonly _tag: "Notification"
  readonly peer: number
  readonly method: string
  readonly params: unknown
}
/** The client's answer to a server request. */
export interface ClientResponse {
  readonly _tag: "Response"
  readonly peer: number
  readonly id: RequestId
  readonly result?: unknown
  readonly error?: RpcFailure
}
/** A line the real server would reject without a reply. */
export interface InvalidLine {
  readonly _tag: "Invalid"
  readonly peer: number
  readonly line: string
}
export type ClientMessage = ClientRequest | ClientNotification | ClientResponse | InvalidLine

/** A JSON-RPC error object: what a handler fails with to answer with an error. */
export interface RpcFailure {
  readonly code: number
  readonly message: string
  readonly data?: unknown
}

/** What `request` yields: the client's reply to a server request, with the id exactly as the client echoed it. */
export type ClientReply =
  | { readonly _tag: "Result"; readonly id: RequestId; readonly result: unknown }
  | { readonly _tag: "Error"; readonly id: RequestId; readonly error: RpcFailure }

/** The peer died (exit, crash, or its spawn Scope closed) while a server request waited for the client's reply. */
export class MockPeerExited extends Schema.TaggedError<MockPeerExited>()("MockPeerExited", { peer: Schema.Number }) {
  override get message() {
    return `mock app-server #${this.peer} exited before the client replied`
  }
}

// ---- the script ----

export type HandlerError = RpcFailure | MockPeerExited

/**
 * Answers one client request. Succeed with the result, fail with an `RpcFailure` to answer with a JSON-RPC error.
 * Params are whatever the client sent (untyped on purpose: scripts poke at them).
 */
export type Handler = (params: any, ctx: RequestContext) => Effect.Effect<unknown, HandlerError>

/**
 * A `turn/start` handler that answers as usual (the turn starts) and then, as the real server does after its answer,
 * runs `script` with the turn's ids: emit items, send server requests, finish the turn.
 */
export const duringTurn = (
  script: (turn: { readonly threadId: string; readonly turnId: string }, ctx: RequestContext) => Effect.Effect<unknown, unknown>
): Handler =>
(params, ctx) =>
  Effect.tap(ctx.fallback, () =>
    ctx.afterReply(
      Effect.flatMap(ctx.awaitActiveTurn(params.threadId), (turnId) => script({ threadId: params.threadId, turnId }, ctx))
    ))

export interface RequestContext extends MockPeer {
  readonly requestId: RequestId
  readonly method: string
  /** runs after the response line is written (the real server emits most notifications after it answers) */
  readonly afterReply: (effect: Effect.Effect<unknown, unknown>) => Effect.Effect<void>
  /** the built-in behaviour for this request (the default handler, or the unknown-method error) */
  readonly fallback: Effect.Effect<unknown, HandlerError>
}

export type TurnMode = "complete" | "hang"

export interface MockScript {
  /** handlers by method; they take precedence over the defaults */
  readonly handlers?: { readonly [method: string]: Handler } | undefined
  /** the agent's reply in default turns; a function sees the turn/start params. Default "mock reply" */
  readonly replyText?: string | ((params: TurnStartInput) => string) | undefined
  /** "complete" (default): a default turn completes right after turn/start; "hang": it stays active until
   * `finishTurn` or `turn/interrupt` */
  readonly turns?: TurnMode | undefined
  readonly model?: string | undefined
  readonly modelProvider?: string | undefined
  /** the stderr tail every peer starts with */
  readonly stderrTail?: string | undefined
  /** like the real server, exit with code 0 as soon as the client closes stdin (default true) */
  readonly exitOnEndInput?: boolean | undefined
  /** capacity of each peer's outgoing line buffer (backpressured). Default 1024 */
  readonly outputBuffer?: number | undefined
  /** runs on every spawn before the peer exists; fail it to simulate a failed spawn */
  readonly onSpawn?: ((options: TransportOptions, spawnNumber: number) => Effect.Effect<void, SpawnFailed>) | undefined
}

export interface TurnStartInput {
  readonly threadId: string
  readonly input?: ReadonlyArray<unknown>
  readonly [key: string]: unknown
}

// ---- the control handles ----

export interface FinishTurnOptions {
  readonly status?: "completed" | "interrupted" | "failed" | undefined
  /** the agent message to emit before turn/completed; default: the reply text for completed turns, none otherwise */
  readonly text?: string | undefined
  readonly error?: string | undefined
}

export interface MockPeer {
  /** spawn number, 1-based (failed spawns count too) */
  readonly index: number
  readonly options: TransportOptions
  /** everything this peer received from the client, in order */
  readonly messages: Effect.Effect<ReadonlyArray<ClientMessage>>
  readonly requests: (method?: string) => Effect.Effect<ReadonlyArray<ClientRequest>>
  /** waits for the `occurrence`-th (default first) message matching, counting those already received */
  readonly awaitMessage: AwaitMessage
  readonly awaitRequest: (method: string, occurrence?: number) => Effect.Effect<ClientRequest>
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void>
  /** sends a server request (ids are integers from 0 per peer, as in the real server, unless given) and waits for the reply */
  readonly request: (
    method: string,
    params?: unknown,
    options?: { readonly id?: RequestId | undefined }
  ) => Effect.Effect<ClientReply, MockPeerExited>
  /** writes one line as is (a newline is added); it is framed like real stdout, so over-long lines arrive as Oversized */
  readonly sendRaw: (line: string) => Effect.Effect<void>
  /** writes raw bytes with no newline added (partial lines, split UTF-8) */
  readonly sendBytes: (bytes: Uint8Array | string) => Effect.Effect<void>
  /** the process exits with this code (default 0): `exited` completes, then stdout ends */
  readonly exit: (code?: number) => Effect.Effect<void>
  /** the process is killed by a signal (default SIGKILL) */
  readonly crash: (signal?: string) => Effect.Effect<void>
  readonly setStderrTail: (text: string) => Effect.Effect<void>
  readonly appendStderr: (text: string) => Effect.Effect<void>
  readonly exitInfo: Effect.Effect<Option.Option<ExitInfo>>
  readonly awaitExit: Effect.Effect<ExitInfo>
  /** the client called endInput (closed stdin) */
  readonly inputEnded: Effect.Effect<boolean>
  /** the spawn's Scope closed (the transport was released) */
  readonly released: Effect.Effect<boolean>
  readonly awaitReleased: Effect.Effect<void>
  /** the turn in progress on a thread, if any */
  readonly activeTurn: (threadId: string) => Effect.Effect<Option.Option<string>>
  /** waits until a turn is in progress on the thread (its turn/start was answered) and yields its id */
  readonly awaitActiveTurn: (threadId: string) => Effect.Effect<string>
  /** ends the active turn of a thread (items, then turn/completed); false when there was none */
  readonly finishTurn: (threadId: string, options?: FinishTurnOptions) => Effect.Effect<boolean>
}

export interface AwaitMessage {
  <B extends ClientMessage>(refinement: (message: ClientMessage) => message is B, occurrence?: number): Effect.Effect<B>
  (predicate: (message: ClientMessage) => boolean, occurrence?: number): Effect.Effect<ClientMessage>
}

export interface MockAppServerService {
  /** how many times `spawn` was called, failed spawns included */
  readonly spawnCount: Effect.Effect<number>
  /** the peers spawned so far, oldest first */
  readonly peers: Effect.Effect<ReadonlyArray<MockPeer>>
  /** the most recent peer; dies when nothing was spawned (a test bug) */
  readonly latest: Effect.Effect<MockPeer>
  /** waits for the peer of the `n`-th spawn (1-based, counting failed spawns) */
  readonly awaitPeer: (n: number) => Effect.Effect<MockPeer>
  /** every message every peer received, in order */
  readonly messages: Effect.Effect<ReadonlyArray<ClientMessage>>
  readonly requests: (method?: string) => Effect.Effect<ReadonlyArray<ClientRequest>>
  readonly awaitMessage: AwaitMessage
  readonly awaitRequest: (method: string, occurrence?: number) => Effect.Effect<ClientRequest>
  /** replaces (or with undefined, removes) the handler of a method for current and future peers */
  readonly setHandler: (method: string, handler: Handler | undefined) => Effect.Effect<void>
  readonly setReplyText: (text: string | ((params: TurnStartInput) => string)) => Effect.Effect<void>
  readonly setTurnMode: (mode: TurnMode) => Effect.Effect<void>
  /** the next spawn fails with SpawnFailed(reason) */
  readonly failNextSpawn: (reason?: string) => Effect.Effect<void>
  /** thread ids the server has persisted (known to thread/resume on any peer) */
  readonly threads: Effect.Effect<ReadonlyArray<string>>
  /** forgets a persisted thread, like deleting its rollout */
  readonly forgetThread: (threadId: string) => Effect.Effect<void>
}

// ---- small primitives ----

/** A level-triggered "something changed": waiters re-check their condition after each fire. */
class Signal {
  private deferred = Deferred.unsafeMake<void>(FiberId.none)
  fire() {
    const fired = this.deferred
    this.deferred = Deferred.unsafeMake<void>(FiberId.none)
    Deferred.unsafeDone(fired, Exit.void)
  }
  /** re-evaluates `probe` after every fire until it yields a value */
  waitFor<A>(probe: () => A | undefined): Effect.Effect<A> {
    const loop = (): Effect.Effect<A> =>
      Effect.suspend(() => {
        const found = probe()
        if (found !== undefined) return Effect.succeed(found)
        // read in the same tick as the probe: a fire in between cannot be missed
        return Deferred.await(this.deferred).pipe(Effect.flatMap(loop))
      })
    return loop()
  }
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const isRequestId = (u: unknown): u is RequestId => typeof u === "string" || (typeof u === "number" && Number.isInteger(u))
const idKey = (id: RequestId) => `${typeof id}:${id}`

const asRpcFailure = (u: unknown): RpcFailure | undefined =>
  isRecord(u) && typeof u.code === "number" && typeof u.message === "string"
    ? u.data === undefined
      ? { code: u.code, message: u.message }
      : { code: u.code, message: u.message, data: u.data }
    : undefined

export const parseClientLine = (peer: number, line: string): ClientMessage => {
  let json: unknown
  try {
    json = JSON.parse(line)
  } catch {
    return { _tag: "Invalid", peer, line }
  }
  if (!isRecord(json)) return { _tag: "Invalid", peer, line }
  if (typeof json.method === "string") {
    if (!("id" in json)) return { _tag: "Notification", peer, method: json.method, params: json.params }
    return isRequestId(json.id)
      ? { _tag: "Request", peer, id: json.id, method: json.method, params: json.params }
      : { _tag: "Invalid", peer, line }
  }
  if (isRequestId(json.id)) {
    const error = asRpcFailure(json.error)
    if (error !== undefined) return { _tag: "Response", peer, id: json.id, error }
    if ("result" in json) return { _tag: "Response", peer, id: json.id, result: json.result }
  }
  return { _tag: "Invalid", peer, line }
}

const findNth = (
  messages: ReadonlyArray<ClientMessage>,
  predicate: (m: ClientMessage) => boolean,
  occurrence: number
): ClientMessage | undefined => {
  let seen = 0
  for (const message of messages) {
    if (predicate(message) && ++seen >= occurrence) return message
  }
  return undefined
}

const isRequestFor = (method: string) => (m: ClientMessage): m is ClientRequest => m._tag === "Request" && m.method === method

const invalidRequest = (message: string): RpcFailure => ({ code: -32600, message })

// ---- shapes of the real messages (0.171) ----

const CLI_VERSION = "0.171.0"

interface StoredThread {
  readonly id: string
  readonly model: string
  readonly modelProvider: string
  readonly cwd: string
  readonly ephemeral: boolean
  readonly createdAt: number
  readonly codexHome: string
  preview: string
}

const sandboxPolicy = (mode: unknown) => {
  switch (mode) {
    case "danger-full-access":
      return { type: "dangerFullAccess" }
    case "workspace-write":
      return { type: "workspaceWrite", writableRoots: [], networkAccess: false, excludeTmpdirEnvVar: false, excludeSlashTmp: false }
    default:
      return { type: "readOnly", networkAccess: false }
  }
}

const threadObject = (t: StoredThread, status: unknown, nowSeconds: number) => ({
  id: t.id,
  sessionId: t.id,
  forkedFromId: null,
  parentThreadId: null,
  preview: t.preview,
  ephemeral: t.ephemeral,
  section: null,
  sectionEnteredAt: null,
  projectId: null,
  historyMode: "paginated",
  modelProvider: t.modelProvider,
  model: t.model,
  reasoningEffort: null,
  createdAt: t.createdAt,
  updatedAt: nowSeconds,
  recencyAt: null,
  status,
  path: t.ephemeral ? null : `${t.codexHome}/sessions/rollout-${t.id}.jsonl`,
  cwd: t.cwd,
  cliVersion: CLI_VERSION,
  originator: "codex-harness",
  source: "vscode",
  threadSource: null,
  agentNickname: null,
  agentRole: null,
  gitInfo: null,
  name: null,
  turns: []
})

const turnObject = (
  id: string,
  status: string,
  startedAt: number,
  end?: { readonly completedAt: number; readonly error: string | undefined }
) => ({
  id,
  rootTurnId: id,
  items: [],
  itemsView: "notLoaded",
  status,
  error: end?.error === undefined ? null : { message: end.error, codexErrorInfo: null, additionalDetails: null, misalignment: null },
  startedAt,
  completedAt: end?.completedAt ?? null,
  durationMs: end === undefined ? null : (end.completedAt - startedAt) * 1000
})

const nowMillis = Clock.currentTimeMillis
const nowSeconds = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))

// ---- the server ----

interface ServerState {
  readonly script: MockScript
  readonly handlers: Map<string, Handler>
  replyText: string | ((params: TurnStartInput) => string)
  turnMode: TurnMode
  readonly threads: Map<string, StoredThread>
  nextUuid: number
  spawnCount: number
  readonly spawnFailures: Array<string>
  readonly peers: Array<MockPeer>
  readonly messages: Array<ClientMessage>
  readonly changed: Signal
}

/** deterministic UUIDv7-looking ids, unique per mock server */
const uuid = (state: ServerState) => `019a0000-0000-7000-8000-${(++state.nextUuid).toString(16).padStart(12, "0")}`

const textOf = (state: ServerState, params: TurnStartInput) =>
  typeof state.replyText === "function" ? state.replyText(params) : state.replyText

interface ActiveTurn {
  readonly turnId: string
  readonly params: TurnStartInput
  readonly startedAt: number
}

interface PeerInternals {
  readonly peer: MockPeer
  readonly handle: TransportHandle
}

const makePeer = (
  state: ServerState,
  index: number,
  options: TransportOptions
): Effect.Effect<PeerInternals, never, Scope.Scope> =>
  Effect.gen(function* () {
    const script = state.script
    const scope = yield* Effect.scope
    const fibers = yield* FiberSet.make<unknown, unknown>()
    const outgoing = yield* Mailbox.make<FramedLine>({ capacity: script.outputBuffer ?? 1024, strategy: "suspend" })
    const framer = new LineFramer(options.maxLineBytes ?? transportDefaults.maxLineBytes)
    const exitDeferred = yield* Deferred.make<ExitInfo>()
    const tailChars = options.stderrTailChars ?? transportDefaults.stderrTailChars
    const encoder = new TextEncoder()

    let exitInfo: ExitInfo | undefined
    let inputEnded = false
    let released = false
    let initialized = false
    let stderr = (script.stderrTail ?? "").slice(-tailChars)
    let nextServerRequestId = 0
    const waiting = new Map<string, Deferred.Deferred<ClientReply, MockPeerExited>>()
    const messages: Array<ClientMessage> = []
    const changed = new Signal()
    const loaded = new Set<string>()
    const activeTurns = new Map<string, ActiveTurn>()
    const codexHome = options.codexHome ?? "/mock/codex-home"

    const writeBytes = (bytes: Uint8Array) =>
      Effect.suspend(() => (exitInfo !== undefined ? Effect.void : Effect.asVoid(outgoing.offerAll(framer.push(bytes)))))
    const writeLine = (line: string) => writeBytes(encoder.encode(line + "\n"))
    const writeJson = (message: unknown) => writeLine(JSON.stringify(message))

    const die = (info: ExitInfo) =>
      Effect.suspend(() => {
        if (exitInfo !== undefined) return Effect.void
        exitInfo = info
        inputEnded = true
        const waiters = [...waiting.values()]
        waiting.clear()
        return Effect.gen(function* () {
          yield* Deferred.succeed(exitDeferred, info)
          // what was already written stays readable, then stdout ends
          yield* outgoing.end
          yield* Effect.forEach(waiters, (w) => Deferred.fail(w, new MockPeerExited({ peer: index })), { discard: true })
          // the process is gone, and its work with it; the caller (maybe a handler) finishes on its own
          yield* Effect.fiberIdWith((self) =>
            Effect.forEach(
              [...fibers].filter((f) => !Equal.equals(f.id(), self)),
              Fiber.interruptFork,
              { discard: true }
            )
          )
          changed.fire()
          state.changed.fire()
        })
      })

    const notify = (method: string, params?: unknown) => writeJson(params === undefined ? { method } : { method, params })

    const request = (method: string, params?: unknown, requestOptions?: { readonly id?: RequestId | undefined }) =>
      Effect.suspend(() => {
        if (exitInfo !== undefined) return Effect.fail(new MockPeerExited({ peer: index }))
        const id = requestOptions?.id ?? nextServerRequestId++
        const deferred = Deferred.unsafeMake<ClientReply, MockPeerExited>(FiberId.none)
        waiting.set(idKey(id), deferred)
        return writeJson(params === undefined ? { id, method } : { id, method, params }).pipe(
          Effect.zipRight(Deferred.await(deferred)),
          Effect.ensuring(Effect.sync(() => waiting.get(idKey(id)) === deferred && waiting.delete(idKey(id))))
        )
      })

    // ---- turns ----

    const finishTurn = (threadId: string, finish: FinishTurnOptions = {}) =>
      Effect.gen(function* () {
        const active = activeTurns.get(threadId)
        if (active === undefined) return false
        activeTurns.delete(threadId)
        changed.fire()
        const status = finish.status ?? "completed"
        const text = finish.text ?? (status === "completed" ? textOf(state, active.params) : undefined)
        const turnId = active.turnId
        if (text !== undefined) {
          const itemId = `msg_${uuid(state)}`
          const item = (t: string) => ({
            type: "agentMessage",
            id: itemId,
            text: t,
            phase: "final_answer",
            memoryCitation: null,
            delivery: null,
            questions: null,
            moderation: null
          })
          yield* notify("item/started", { item: item(""), threadId, turnId, startedAtMs: yield* nowMillis })
          if (text !== "") yield* notify("item/agentMessage/delta", { threadId, turnId, itemId, delta: text })
          yield* notify("item/completed", { item: item(text), threadId, turnId, completedAtMs: yield* nowMillis })
        }
        yield* notify("thread/status/changed", { threadId, status: { type: "idle" } })
        const completedAt = yield* nowSeconds
        yield* notify("turn/completed", {
          threadId,
          turn: turnObject(turnId, status, active.startedAt, { completedAt, error: finish.error })
        })
        return true
      })

    const beginTurn = (params: TurnStartInput, turnId: string, startedAt: number) =>
      Effect.gen(function* () {
        const threadId = params.threadId
        yield* notify("thread/status/changed", { threadId, status: { type: "active", activeFlags: [] } })
        yield* notify("turn/started", { threadId, turn: turnObject(turnId, "inProgress", startedAt) })
        const userItem = { type: "userMessage", id: uuid(state), clientId: null, content: params.input ?? [] }
        yield* notify("item/started", { item: userItem, threadId, turnId, startedAtMs: yield* nowMillis })
        yield* notify("item/completed", { item: userItem, threadId, turnId, completedAtMs: yield* nowMillis })
        if (state.turnMode === "complete") yield* finishTurn(threadId)
      })

    // ---- default handlers ----

    const opened = (t: StoredThread, params: Record<string, unknown>) =>
      Effect.map(nowSeconds, (now) => ({
        thread: threadObject(t, { type: "idle" }, now),
        model: t.model,
        modelProvider: t.modelProvider,
        serviceTier: null,
        disabledPluginIds: [],
        cwd: t.cwd,
        instructionSources: [],
        approvalPolicy: params.approvalPolicy ?? "on-request",
        approvalsReviewer: params.approvalsReviewer ?? "user",
        sandbox: sandboxPolicy(params.sandbox),
        reasoningEffort: null
      }))

    const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

    const defaults: Record<string, Handler> = {
      initialize: (params) =>
        Effect.succeed({
          userAgent: `${str(params?.clientInfo?.name) ?? "codex"}/${CLI_VERSION} (Mock 1.0; x86_64) mock-app-server`,
          codexHome,
          platformFamily: "unix",
          platformOs: "linux"
        }),
      "thread/start": (params: Record<string, unknown> = {}, ctx) =>
        Effect.gen(function* () {
          const t: StoredThread = {
            id: uuid(state),
            model: str(params.model) ?? script.model ?? "mock-model",
            modelProvider: str(params.modelProvider) ?? script.modelProvider ?? "mock",
            cwd: str(params.cwd) ?? options.cwd ?? "/mock/workspace",
            ephemeral: params.ephemeral === true,
            createdAt: yield* nowSeconds,
            codexHome,
            preview: ""
          }
          state.threads.set(t.id, t)
          loaded.add(t.id)
          const result = yield* opened(t, params)
          yield* ctx.afterReply(notify("thread/started", { thread: result.thread }))
          return result
        }),
      "thread/resume": (params: Record<string, unknown> = {}) =>
        Effect.gen(function* () {
          const threadId = str(params.threadId)
          if (threadId === undefined) return yield* Effect.fail(invalidRequest("Invalid request: missing field `threadId`"))
          const t = state.threads.get(threadId)
          if (t === undefined) return yield* Effect.fail(invalidRequest(`no rollout found for thread id ${threadId}`))
          loaded.add(threadId)
          return yield* opened(t, params)
        }),
      "turn/start": (params: TurnStartInput, ctx) =>
        Effect.gen(function* () {
          const threadId = str(params?.threadId)
          if (threadId === undefined) return yield* Effect.fail(invalidRequest("Invalid request: missing field `threadId`"))
          if (!loaded.has(threadId)) return yield* Effect.fail(invalidRequest(`thread not found: ${threadId}`))
          const active = activeTurns.get(threadId)
          // like the real server, a turn/start during an active turn steers it and answers with that turn
          if (active !== undefined) return { turn: turnObject(active.turnId, "inProgress", active.startedAt) }
          const turnId = uuid(state)
          const startedAt = yield* nowSeconds
          activeTurns.set(threadId, { turnId, params, startedAt })
          changed.fire()
          const t = state.threads.get(threadId)
          if (t !== undefined && t.preview === "") {
            const first = params.input?.[0]
            if (isRecord(first) && typeof first.text === "string") t.preview = first.text
          }
          yield* ctx.afterReply(beginTurn(params, turnId, startedAt))
          return { turn: turnObject(turnId, "inProgress", startedAt) }
        }),
      "turn/interrupt": (params: Record<string, unknown> = {}, ctx) =>
        Effect.gen(function* () {
          const threadId = str(params.threadId) ?? ""
          const active = activeTurns.get(threadId)
          if (active === undefined || active.turnId !== params.turnId) {
            return yield* Effect.fail(invalidRequest("no active turn to interrupt"))
          }
          yield* ctx.afterReply(finishTurn(threadId, { status: "interrupted" }))
          return {}
        })
    }

    const unknownMethod = (method: string): RpcFailure =>
      invalidRequest(
        `Invalid request: unknown variant \`${method}\`, expected one of ${Object.keys(defaults)
          .map((m) => `\`${m}\``)
          .join(", ")}`
      )

    // ---- serving client requests ----

    const serve = (req: ClientRequest) =>
      Effect.gen(function* () {
        const after: Array<Effect.Effect<unknown, unknown>> = []
        const builtIn = defaults[req.method]
        const fallback: Effect.Effect<unknown, HandlerError> = Effect.suspend(() =>
          builtIn === undefined ? Effect.fail(unknownMethod(req.method)) : builtIn(req.params, ctx)
        )
        const ctx: RequestContext = {
          ...peer,
          requestId: req.id,
          method: req.method,
          afterReply: (effect) => Effect.sync(() => void after.push(effect)),
          fallback
        }
        const gate: RpcFailure | undefined =
          req.method === "initialize"
            ? initialized
              ? invalidRequest("Already initialized")
              : undefined
            : initialized
            ? undefined
            : invalidRequest("Not initialized")
        const custom = state.handlers.get(req.method)
        const run: Effect.Effect<unknown, HandlerError> =
          gate !== undefined
            ? Effect.fail(gate)
            : custom === undefined
            ? fallback
            : Effect.suspend(() => custom(req.params, ctx))
        const outcome = yield* Effect.exit(run)
        if (Exit.isSuccess(outcome)) {
          if (req.method === "initialize") initialized = true
          yield* writeJson({ id: req.id, result: outcome.value ?? {} })
        } else {
          const failure = Cause.failureOption(outcome.cause)
          if (Option.isSome(failure) && failure.value instanceof MockPeerExited) return
          if (Option.isNone(failure) && Cause.isInterruptedOnly(outcome.cause)) return
          const error = Option.flatMap(failure, (f) => Option.fromNullable(asRpcFailure(f))).pipe(
            Option.getOrElse(() => ({ code: -32603, message: `mock handler for ${req.method} failed: ${Cause.pretty(outcome.cause)}` }))
          )
          yield* writeJson({ id: req.id, error })
        }
        for (const effect of after) {
          yield* effect.pipe(Effect.catchAllCause((cause) => Effect.logWarning("mock afterReply effect failed", cause)))
        }
      })

    const record = (message: ClientMessage) => {
      messages.push(message)
      state.messages.push(message)
      changed.fire()
      state.changed.fire()
    }

    const send = (line: string): Effect.Effect<boolean> =>
      Effect.suspend(() => {
        if (inputEnded || exitInfo !== undefined) return Effect.succeed(false)
        const message = parseClientLine(index, line)
        record(message)
        switch (message._tag) {
          case "Request":
            // a fork inherits the caller's interruptibility, and the client may write from a finalizer: the peer's
            // work must stay interruptible so its scope can always close
            return FiberSet.run(fibers, Effect.interruptible(serve(message))).pipe(Effect.as(true))
          case "Response": {
            const waiter = waiting.get(idKey(message.id))
            if (waiter === undefined) return Effect.succeed(true)
            waiting.delete(idKey(message.id))
            const reply: ClientReply =
              message.error !== undefined
                ? { _tag: "Error", id: message.id, error: message.error }
                : { _tag: "Result", id: message.id, result: message.result }
            return Deferred.succeed(waiter, reply).pipe(Effect.as(true))
          }
          default:
            return Effect.succeed(true)
        }
      })

    const awaitMessage = ((predicate: (m: ClientMessage) => boolean, occurrence = 1) =>
      changed.waitFor(() => findNth(messages, predicate, occurrence))) as AwaitMessage

    const peer: MockPeer = {
      index,
      options,
      messages: Effect.sync(() => [...messages]),
      requests: (method) =>
        Effect.sync(() => messages.filter((m): m is ClientRequest => m._tag === "Request" && (method === undefined || m.method === method))),
      awaitMessage,
      awaitRequest: (method, occurrence = 1) => awaitMessage(isRequestFor(method), occurrence),
      notify,
      request,
      sendRaw: writeLine,
      sendBytes: (bytes) => writeBytes(typeof bytes === "string" ? encoder.encode(bytes) : bytes),
      exit: (code = 0) => die({ exitCode: code, signal: null }),
      crash: (signal = "SIGKILL") => die({ exitCode: null, signal }),
      setStderrTail: (text) => Effect.sync(() => void (stderr = text.slice(-tailChars))),
      appendStderr: (text) => Effect.sync(() => void (stderr = (stderr + text).slice(-tailChars))),
      exitInfo: Effect.sync(() => Option.fromNullable(exitInfo)),
      awaitExit: Deferred.await(exitDeferred),
      inputEnded: Effect.sync(() => inputEnded),
      released: Effect.sync(() => released),
      awaitReleased: changed.waitFor(() => (released ? true : undefined)).pipe(Effect.asVoid),
      activeTurn: (threadId) => Effect.sync(() => Option.fromNullable(activeTurns.get(threadId)?.turnId)),
      awaitActiveTurn: (threadId) => changed.waitFor(() => activeTurns.get(threadId)?.turnId),
      finishTurn
    }

    // closing the spawn's Scope is the transport being released: stdin closes, the process exits (or is killed), and
    // every fiber of the peer stops (the FiberSet, made first, is finalized last)
    yield* Scope.addFinalizer(
      scope,
      Effect.suspend(() => {
        released = true
        inputEnded = true
        return die(script.exitOnEndInput === false ? { exitCode: null, signal: "SIGKILL" } : { exitCode: 0, signal: null }).pipe(
          Effect.zipRight(outgoing.shutdown),
          Effect.zipRight(
            Effect.sync(() => {
              changed.fire()
              state.changed.fire()
            })
          )
        )
      })
    )

    const handle: TransportHandle = {
      pid: undefined,
      incoming: Mailbox.toStream(outgoing),
      send,
      exited: Deferred.await(exitDeferred),
      stderrTail: Effect.sync(() => stderr),
      endInput: Effect.suspend(() => {
        if (inputEnded) return Effect.void
        inputEnded = true
        changed.fire()
        return script.exitOnEndInput === false ? Effect.void : die({ exitCode: 0, signal: null })
      })
    }
    return { peer, handle }
  })

const makeService = (script: MockScript = {}) =>
  Effect.sync(() => {
    const state: ServerState = {
      script,
      handlers: new Map(Object.entries(script.handlers ?? {})),
      replyText: script.replyText ?? "mock reply",
      turnMode: script.turns ?? "complete",
      threads: new Map(),
      nextUuid: 0,
      spawnCount: 0,
      spawnFailures: [],
      peers: [],
      messages: [],
      changed: new Signal()
    }

    const spawn = (options: TransportOptions): Effect.Effect<TransportHandle, SpawnFailed, Scope.Scope> =>
      Effect.gen(function* () {
        const index = ++state.spawnCount
        state.changed.fire()
        const failure = state.spawnFailures.shift()
        if (failure !== undefined) return yield* new SpawnFailed({ command: "mock codex app-server", reason: failure })
        if (script.onSpawn !== undefined) yield* script.onSpawn(options, index)
        const { handle, peer } = yield* makePeer(state, index, options)
        state.peers.push(peer)
        state.changed.fire()
        return handle
      })

    const awaitMessage = ((predicate: (m: ClientMessage) => boolean, occurrence = 1) =>
      state.changed.waitFor(() => findNth(state.messages, predicate, occurrence))) as AwaitMessage

    const service: MockAppServerService = {
      spawnCount: Effect.sync(() => state.spawnCount),
      peers: Effect.sync(() => [...state.peers]),
      latest: Effect.suspend(() => {
        const peer = state.peers[state.peers.length - 1]
        return peer === undefined ? Effect.dieMessage("MockAppServer: nothing was spawned yet") : Effect.succeed(peer)
      }),
      awaitPeer: (n) => state.changed.waitFor(() => state.peers.find((p) => p.index === n)),
      messages: Effect.sync(() => [...state.messages]),
      requests: (method) =>
        Effect.sync(() =>
          state.messages.filter((m): m is ClientRequest => m._tag === "Request" && (method === undefined || m.method === method))
        ),
      awaitMessage,
      awaitRequest: (method, occurrence = 1) => awaitMessage(isRequestFor(method), occurrence),
      setHandler: (method, handler) =>
        Effect.sync(() => {
          if (handler === undefined) state.handlers.delete(method)
          else state.handlers.set(method, handler)
        }),
      setReplyText: (text) => Effect.sync(() => void (state.replyText = text)),
      setTurnMode: (mode) => Effect.sync(() => void (state.turnMode = mode)),
      failNextSpawn: (reason = "mock spawn failure") => Effect.sync(() => void state.spawnFailures.push(reason)),
      threads: Effect.sync(() => [...state.threads.keys()]),
      forgetThread: (threadId) => Effect.sync(() => void state.threads.delete(threadId))
    }
    return { service, spawn }
  })

/** `Transport` backed by scripted in-memory peers, plus the `MockAppServer` control handle. */
export const layer = (script?: MockScript): Layer.Layer<Transport | MockAppServer> =>
  Layer.effectContext(
    Effect.map(makeService(script), ({ service, spawn }) =>
      Context.make(MockAppServer, service).pipe(Context.add(Transport, { spawn }))
    )
  )

/** The control handle of the mock app-server: spawned peers, received messages, runtime script changes. */
export class MockAppServer extends Context.Tag("codex-harness/testing/MockAppServer")<MockAppServer, MockAppServerService>() {
  static readonly layer = layer
}

/** A refinement for `awaitMessage`: a request of this method. */
export const isRequest = isRequestFor
/** A refinement for `awaitMessage`: a notification of this method. */
export const isNotification =
  (method: string) =>
  (m: ClientMessage): m is ClientNotification =>
    m._tag === "Notification" && m.method === method
/** A refinement for `awaitMessage`: the client's reply to the server request with exactly this id. */
export const isResponse =
  (id: RequestId) =>
  (m: ClientMessage): m is ClientResponse =>
    m._tag === "Response" && m.id === id
