// Public: the harness service an app embeds, what a turn takes and gives, and the events it reports.
export { Harness, type HarnessService } from "../harness/Harness.js"
export type { NewThreadOutcome, SteerOutcome, TurnRequest, TurnResult } from "../harness/CodexHarness.js"
export { type EventSink, type OpenedThread, TurnEvent, type TurnKind, type TurnOutcome } from "../../schemas/turnEvents.js"
