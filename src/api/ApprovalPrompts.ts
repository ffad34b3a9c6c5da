// Public: the optional port that decides what Codex asks to approve (default: every request is declined).
export {
  type ApprovalDecision,
  ApprovalPromptFailed,
  ApprovalPrompts,
  type ApprovalPromptsService,
  type ApprovalRequest,
  type CommandApproval,
  declineAll,
  type DiagnosticsApproval,
  type DiagnosticsThread,
  type FileChange,
  type FileChangeApproval,
  type McpToolApproval,
  type PermissionsApproval,
  type TurnApprovalOrigin,
  type TurnApprovalRequest
} from "../ports/ApprovalPrompts.js"
