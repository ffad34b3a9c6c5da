// What a session's next start, resume or turn resends (S12, S13), from the harness settings and the session's state.
// Pure.
import type { HarnessSettings } from "../config/Settings.js"
import type { SessionState } from "../session/SessionState.js"
import type { ThreadSettings } from "./TurnRunner.js"

/**
 * The user's model choice is never replaced by the default, and a locked (supervised) session sends no model at all:
 * Codex restores the thread's own pair (S13).
 */
export const threadSettingsFor = (
  settings: HarnessSettings,
  state: SessionState,
  requestedModel?: string | undefined
): ThreadSettings => ({
  cwd: settings.cwd,
  approvalPolicy: settings.approvalPolicy,
  sandbox: settings.sandbox,
  approvalsReviewer: settings.approvalsReviewer,
  serviceTier: settings.serviceTier,
  deadline: settings.turnTimeout,
  providerSilence: settings.providerSilence,
  model: state.runtime?.locked === true || state.binding?.locked === true
    ? undefined
    : (requestedModel ?? state.modelChoice ?? settings.model)
})
