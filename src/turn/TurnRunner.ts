// One turn on one thread: open the thread (start, or resume a bound one), subscribe to its notifications before
// `turn/start`, follow the turn to `turn/completed`, and collect the final assistant text. It owns no state between
// turns; bindings and the transcript belong to the session room.
import { Effect, Option, Schema, Stream } from "effect"
import type { NotificationMessage } from "../../schemas/jsonrpc.js"
import {
  type AskForApproval,
  ErrorNotification,
  ItemCompletedNotification,
  type SandboxMode,
  type ThreadItem,
  TurnCompletedNotification,
  type TurnStatus,
  type UserInput
} from "../../schemas/protocol.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import { type RequestError, RpcError } from "../appserver/errors.js"

export interface ThreadSettings {
  readonly cwd: string
  readonly approvalPolicy: AskForApproval
  readonly sandbox: SandboxMode
  readonly model?: string | undefined
  /**
   * Codex retries an unreachable model provider forever ("Reconnecting... waiting for network"). After this many
   * consecutive connection failures with no progress the turn is interrupted and reported failed. Default 1: Codex's
   * second retry notice comes about 5 s after the first.
   */
  readonly maxReconnects?: number | undefined
}

export const defaultMaxReconnects = 1

export interface OpenedThread {
  readonly threadId: string
  readonly model: string
  readonly modelProvider: string
  /** true when an existing thread was resumed */
  readonly resumed: boolean
  /** set when the bound thread was gone and a fresh one replaced it */
  readonly replacedThreadId?: string | undefined
}

/** What a turn produced. A failed or interrupted turn still carries the reply text it completed. */
export interface TurnOutcome {
  readonly threadId: string
  readonly turnId: string
  readonly status: TurnStatus
  readonly finalText: string | undefined
  readonly items: ReadonlyArray<ThreadItem>
  readonly error: string | undefined
}

export type TurnEvent =
  | { readonly type: "thread.opened"; readonly thread: OpenedThread }
  | { readonly type: "turn.started"; readonly threadId: string; readonly turnId: string }
  | { readonly type: "notification"; readonly notification: NotificationMessage }
  | { readonly type: "turn.completed"; readonly outcome: TurnOutcome }

export type EventSink = (event: TurnEvent) => Effect.Effect<void>

const preserve = { onExcessProperty: "preserve" } as const
const decodeItemCompleted = Schema.decodeUnknownOption(ItemCompletedNotification, preserve)
const decodeTurnCompleted = Schema.decodeUnknownOption(TurnCompletedNotification, preserve)
const decodeError = Schema.decodeUnknownOption(ErrorNotification, preserve)

/** The app-server's words for a bound thread that no longer exists. */
export const isThreadGone = (error: RequestError): error is RpcError =>
  error instanceof RpcError && /thread not found|no rollout|not loaded|invalid thread id/i.test(error.rpcMessage)

export const openThread = (
  connection: AppServerConnection,
  settings: ThreadSettings,
  boundThreadId: string | undefined
): Effect.Effect<OpenedThread, RequestError> => {
  const common = {
    cwd: settings.cwd,
    approvalPolicy: settings.approvalPolicy,
    sandbox: settings.sandbox,
    personality: "none" as const,
    ...(settings.model !== undefined ? { model: settings.model } : {})
  }
  const start = connection.request("thread/start", common).pipe(
    Effect.map((r) => ({ threadId: r.thread.id, model: r.model, modelProvider: r.modelProvider, resumed: false }))
  )
  if (boundThreadId === undefined) return start
  return connection.request("thread/resume", { ...common, threadId: boundThreadId, excludeTurns: true }).pipe(
    Effect.map((r): OpenedThread => ({ threadId: r.thread.id, model: r.model, modelProvider: r.modelProvider, resumed: true })),
    Effect.catchIf(isThreadGone, (error) =>
      Effect.logWarning(`bound thread ${boundThreadId} is gone (${error.rpcMessage}); starting a fresh thread`).pipe(
        Effect.zipRight(start),
        Effect.map((opened): OpenedThread => ({ ...opened, replacedThreadId: boundThreadId }))
      )
    )
  )
}

interface Progress {
  readonly items: Array<ThreadItem>
  finalText: string | undefined
  error: string | undefined
  status: TurnStatus | undefined
  reconnects: number
  unreachable: string | undefined
}

/** A retry notice for a provider that could not be connected to at all (no HTTP status). */
const isConnectionFailure = (info: unknown): boolean => {
  const disconnected = (info as { responseStreamDisconnected?: { httpStatusCode?: unknown } } | null | undefined)
    ?.responseStreamDisconnected
  return disconnected !== undefined && disconnected.httpStatusCode == null
}

const absorb = (turnId: string, maxReconnects: number, progress: Progress, n: NotificationMessage): Progress => {
  if (n.method !== "error") progress.reconnects = 0
  switch (n.method) {
    case "item/completed": {
      const parsed = decodeItemCompleted(n.params)
      if (Option.isSome(parsed) && parsed.value.turnId === turnId) {
        const item = parsed.value.item
        progress.items.push(item)
        if (item.type === "agentMessage" && "text" in item) progress.finalText = item.text as string
      }
      break
    }
    case "error": {
      const parsed = decodeError(n.params)
      if (Option.isNone(parsed) || parsed.value.turnId !== turnId) break
      const { error, willRetry } = parsed.value
      if (!willRetry) {
        progress.error = error.message
      } else if (isConnectionFailure(error.codexErrorInfo) && ++progress.reconnects > maxReconnects) {
        progress.unreachable = `the model provider cannot be reached (${error.additionalDetails ?? error.message})`
      }
      break
    }
    case "turn/completed": {
      const parsed = decodeTurnCompleted(n.params)
      if (Option.isSome(parsed) && parsed.value.turn.id === turnId) {
        progress.status = parsed.value.turn.status
        progress.error = parsed.value.turn.error?.message ?? progress.error
      }
      break
    }
  }
  return progress
}

const belongsTo = (turnId: string, n: NotificationMessage) => {
  const p = n.params as { turnId?: unknown; turn?: { id?: unknown } } | undefined
  return p?.turnId === turnId || p?.turn?.id === turnId
}

/** Runs one turn to its end. Interrupting the caller sends `turn/interrupt` (best effort). */
export const runTurn = (
  connection: AppServerConnection,
  threadId: string,
  input: ReadonlyArray<UserInput>,
  settings: ThreadSettings,
  onEvent: EventSink = () => Effect.void
): Effect.Effect<TurnOutcome, RequestError> =>
  Effect.scoped(
    Effect.gen(function* () {
      // subscribe first: the turn's first notifications can arrive before the turn/start response
      const events = yield* connection.subscribe({ threadId })
      const started = yield* connection.request("turn/start", {
        threadId,
        input,
        approvalPolicy: settings.approvalPolicy,
        ...(settings.model !== undefined ? { model: settings.model } : {})
      })
      const turnId = started.turn.id
      yield* onEvent({ type: "turn.started", threadId, turnId })
      const maxReconnects = settings.maxReconnects ?? defaultMaxReconnects
      const initial: Progress = {
        items: [],
        finalText: undefined,
        error: undefined,
        status: undefined,
        reconnects: 0,
        unreachable: undefined
      }
      const interrupt = connection.requestRaw("turn/interrupt", { threadId, turnId }, { timeout: "2 seconds" }).pipe(Effect.ignore)
      const progress = yield* events.pipe(
        Stream.filter((n) => belongsTo(turnId, n)),
        Stream.tap((notification) => onEvent({ type: "notification", notification })),
        Stream.runFoldWhile(
          initial,
          (p) => p.status === undefined && p.unreachable === undefined,
          (p, n) => absorb(turnId, maxReconnects, p, n)
        ),
        Effect.raceFirst(Effect.flatMap(connection.terminated, Effect.fail)),
        Effect.onInterrupt(() => interrupt)
      )
      if (progress.unreachable !== undefined) yield* interrupt
      const outcome: TurnOutcome = {
        threadId,
        turnId,
        status: progress.status ?? "failed",
        finalText: progress.finalText,
        items: progress.items,
        error: progress.unreachable ?? progress.error
      }
      yield* onEvent({ type: "turn.completed", outcome })
      return outcome
    })
  )
