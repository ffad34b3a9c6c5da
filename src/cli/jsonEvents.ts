// The `--json` event stream's encoder lives with the control API (control/jsonEvents.ts), which streams the same
// events to its clients; the CLI adds how a failure reads as one line.
import type { Cause } from "effect"
import { render } from "./errors.js"

export * from "../control/jsonEvents.js"

/** a failure as the one line the CLI prints for it (errors.ts), for `turn.failed` */
export const causeLine = (cause: Cause.Cause<unknown>): string => render(cause)?.line || "failed"
