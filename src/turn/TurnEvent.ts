// A turn's events live in schemas/turnEvents.ts, where front ends read them without depending on src/turn; this
// module keeps the turn room's own imports short.
export * from "../../schemas/turnEvents.js"

import type { AppServerConnection } from "../appserver/AppServerConnection.js"

/** A turn the app-server is running: where to steer or stop it (the session work registry keeps it). */
export interface LiveTurn {
  readonly connection: AppServerConnection
  readonly threadId: string
  readonly turnId: string
}
