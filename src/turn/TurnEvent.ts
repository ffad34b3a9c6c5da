// What a turn reports while it runs, as a tagged union: the thread it opened, the turn's start, each decoded
// notification of the turn, and its outcome. Sinks (the CLI's printers, an embedder's UI) match on `_tag`.
import { Data, type Effect } from "effect"
import type { ServerNotification, ThreadItem, TurnStatus } from "../../schemas/protocol.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"

/** A turn the app-server is running: where to steer or stop it. */
export interface LiveTurn {
  readonly connection: AppServerConnection
  readonly threadId: string
  readonly turnId: string
}

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
