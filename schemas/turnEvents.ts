// What a turn reports while it runs, as a tagged union: the thread it opened, the turn's start, each decoded
// notification of the turn, and its outcome. Sinks (the CLI's printers, serve's streams, the cluster entity, an
// embedder's UI) match on `_tag`. Kept here beside the wire schemas, not in src/turn, so that front ends that print
// a turn depend on what it reports and never on how a turn runs.
import { Data, type Effect } from "effect"
import type { ServerNotification, ThreadItem, TurnStatus } from "./protocol.js"

export interface OpenedThread {
  readonly threadId: string
  readonly model: string
  readonly modelProvider: string
  /** true when an existing thread was resumed */
  readonly resumed: boolean
  /** true when the thread was already loaded on this connection as the open would leave it: nothing was sent */
  readonly reused?: boolean | undefined
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

export type TurnEvent = Data.TaggedEnum<{
  ThreadOpened: { readonly thread: OpenedThread }
  TurnStarted: { readonly threadId: string; readonly turnId: string }
  Notification: { readonly notification: ServerNotification }
  TurnCompleted: { readonly outcome: TurnOutcome }
}>

export const TurnEvent = Data.taggedEnum<TurnEvent>()

export type EventSink = (event: TurnEvent) => Effect.Effect<void>

/** What a turn is for: a user's turn, a heartbeat, or one of the harness's internal kinds (S10). */
export type TurnKind = "user" | "heartbeat" | "lightweight" | "ringZero" | "messageOnly" | "toolDisabled"
