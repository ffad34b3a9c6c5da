// Public: the optional port that decides Codex's native hooks (PreToolUse, PostToolUse, PermissionRequest, Stop).
export {
  allowAll,
  type HookContext,
  type HookPayload,
  HookPolicy,
  type HookPolicyService,
  type PreToolUseVerdict,
  type StopVerdict
} from "../ports/HookPolicy.js"
