// The public shapes a test scripts and drives the mock app-server with: handlers, the script, the per-spawn peer handle
// and the server handle. Types plus `duringTurn`, nothing stateful; a change here changes what users' tests compile
// against, so it must never narrow what a handler or a test may already do.
import { Effect, type Option } from "effect"
import type { RequestId } from "../../../schemas/jsonrpc.js"
import type { SpawnFailed } from "../../appserver/errors.js"
import type { ExitInfo, TransportOptions } from "../../appserver/Transport.js"
import type { ClientMessage, ClientReply, ClientRequest, MockPeerExited, RpcFailure } from "./ClientMessages.js"
import type { ReplayMismatch, ReplayScript } from "./Replay.js"

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
  /**
   * Replay mode: every spawn plays the next connection of a wire recording (`codex-harness run --record FILE`,
   * `readRecording`) instead of the handlers and defaults above, and checks what the harness sends against it
   * (`verifyReplay`). Spawns still count, record messages and exit as usual.
   */
  readonly replay?: ReplayScript | undefined
  /** runs on every spawn before the peer exists; fail it to simulate a failed spawn */
  readonly onSpawn?: ((options: TransportOptions, spawnNumber: number) => Effect.Effect<void, SpawnFailed>) | undefined
}

export interface TurnStartInput {
  readonly threadId: string
  readonly input?: ReadonlyArray<unknown>
  readonly [key: string]: unknown
}

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
  /**
   * Replay mode: fails with the first difference between what the harness sent and the recording, or, when there was
   * none, with the first recorded harness message it has not sent (call it once the harness is done: its scope closed).
   * Succeeds when the harness sent exactly what was recorded, and outside replay mode.
   */
  readonly verifyReplay: Effect.Effect<void, ReplayMismatch>
}
