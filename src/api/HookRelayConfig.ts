// Public: the optional port that says how the native hook relay runs (its command, socket directory, timeouts).
export { HookRelayConfig, type HookRelayOptions } from "../approvals/HookRelay.js"
