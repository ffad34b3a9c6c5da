// Public: every typed error the harness's calls and its layer's build fail with, and the unions that name them.
export { AppServerExited, AppServerUnreachable, ConnectionRetired, ProtocolDecodeError, RequestTimedOut, RpcError, SpawnFailed, type ConnectionClosed, type RequestError } from "../appserver/errors.js"
export { CodexBinaryNotFound } from "../appserver/CodexBinary.js"
export type { LeaseError } from "../appserver/ClientPool.js"
export { AppsInventoryFailed, AppsNotConfirmed, type AppsError } from "../apps/errors.js"
export { HookRelayServerError } from "../approvals/HookRelayServer.js"
export type { HarnessError } from "../harness/CodexHarness.js"
export { ShuttingDown } from "../harness/SessionWorkApi.js"
export {
  CodexBinaryUnusable,
  InvalidSettings,
  type StartupError,
  StateDirUnusable,
  TempDirUnusable,
  WorkspaceMissing
} from "../harness/Startup.js"
export { ModelLocked, NewThreadRefused, RuntimeMismatch, SupervisedBindingDrift, SupervisedThreadGone, SupervisionDisabled } from "../session/errors.js"
export { SessionLocked, SessionLockFailed } from "../session/SessionLock.js"
export { InvalidSessionId, type SessionHoldError, SessionStoreError } from "../session/SessionStore.js"
export type { RuntimeRefusal } from "../session/SessionRuntime.js"
export type { MirrorError } from "../session/TranscriptMirror.js"
export { BootstrapFailed } from "../turn/BootstrapProjection.js"
