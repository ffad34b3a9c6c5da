// Public: the optional port that decides what of a conversation a fresh thread is given (S38).
export {
  type BootstrapDecision,
  type BootstrapReason,
  type BootstrapRequest,
  ContextEngine,
  type ContextEngineService,
  projectAll,
  type ProjectionBounds,
  skipAll
} from "../ports/ContextEngine.js"
export type { SessionRecord } from "../../schemas/session.js"
