// The messages of the real codex app-server 0.171 that the mock answers and notifies with: thread and turn objects,
// the response to thread/start and thread/resume, and the items of a turn. Shapes only; they must stay field for field
// what the real server sends, so code tested against the mock decodes the real wire the same way.
import { Clock, Effect } from "effect"

export const CLI_VERSION = "0.171.0"

/** a thread the server has persisted: known to thread/resume on every peer of the same mock server */
export interface StoredThread {
  readonly id: string
  readonly model: string
  readonly modelProvider: string
  readonly cwd: string
  readonly ephemeral: boolean
  readonly createdAt: number
  readonly codexHome: string
  preview: string
}

const sandboxPolicy = (mode: unknown) => {
  switch (mode) {
    case "danger-full-access":
      return { type: "dangerFullAccess" }
    case "workspace-write":
      return { type: "workspaceWrite", writableRoots: [], networkAccess: false, excludeTmpdirEnvVar: false, excludeSlashTmp: false }
    default:
      return { type: "readOnly", networkAccess: false }
  }
}

const threadObject = (t: StoredThread, status: unknown, nowSeconds: number) => ({
  id: t.id,
  sessionId: t.id,
  forkedFromId: null,
  parentThreadId: null,
  preview: t.preview,
  ephemeral: t.ephemeral,
  section: null,
  sectionEnteredAt: null,
  projectId: null,
  historyMode: "paginated",
  modelProvider: t.modelProvider,
  model: t.model,
  reasoningEffort: null,
  createdAt: t.createdAt,
  updatedAt: nowSeconds,
  recencyAt: null,
  status,
  path: t.ephemeral ? null : `${t.codexHome}/sessions/rollout-${t.id}.jsonl`,
  cwd: t.cwd,
  cliVersion: CLI_VERSION,
  originator: "codex-harness",
  source: "vscode",
  threadSource: null,
  agentNickname: null,
  agentRole: null,
  gitInfo: null,
  name: null,
  turns: []
})

export const turnObject = (
  id: string,
  status: string,
  startedAt: number,
  end?: { readonly completedAt: number; readonly error: string | undefined }
) => ({
  id,
  rootTurnId: id,
  items: [],
  itemsView: "notLoaded",
  status,
  error: end?.error === undefined ? null : { message: end.error, codexErrorInfo: null, additionalDetails: null, misalignment: null },
  startedAt,
  completedAt: end?.completedAt ?? null,
  durationMs: end === undefined ? null : (end.completedAt - startedAt) * 1000
})

export const nowMillis = Clock.currentTimeMillis
export const nowSeconds = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))

/** the result of thread/start and thread/resume: the thread, idle, with the settings it was opened with */
export const openedThread = (t: StoredThread, params: Record<string, unknown>) =>
  Effect.map(nowSeconds, (now) => ({
    thread: threadObject(t, { type: "idle" }, now),
    model: t.model,
    modelProvider: t.modelProvider,
    serviceTier: null,
    disabledPluginIds: [],
    cwd: t.cwd,
    instructionSources: [],
    approvalPolicy: params.approvalPolicy ?? "on-request",
    approvalsReviewer: params.approvalsReviewer ?? "user",
    sandbox: sandboxPolicy(params.sandbox),
    reasoningEffort: null
  }))

/** the agent's final answer as an item (empty text for item/started, the whole text for item/completed) */
export const agentMessageItem = (id: string, text: string) => ({
  type: "agentMessage",
  id,
  text,
  phase: "final_answer",
  memoryCitation: null,
  delivery: null,
  questions: null,
  moderation: null
})

export const userMessageItem = (id: string, content: ReadonlyArray<unknown>) => ({ type: "userMessage", id, clientId: null, content })
