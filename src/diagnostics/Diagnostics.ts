// S36: diagnostics for a session, sent to OpenAI through Codex's own `feedback/upload`, only when approved. The plan
// names exactly what would be sent (the session's bound thread and the sub-agent threads Codex spawned under it, found
// with `thread/list {ancestorThreadId}`; `threadOnly` keeps the bound thread alone; Codex's logs; the note) and is
// asked through the ApprovalPrompts port as a `diagnostics` request, which counts the threads but names none: what a
// person reads before deciding is there whatever the decision, and a denied upload must have shown no Codex id.
// Denied, unanswered or a failed prompt: nothing is sent and no id is returned. Approved: one `feedback/upload` per thread over the session's own connection (its
// recorded runtime), each with the note as its reason; a refusal (feedback disabled, OpenAI unreachable) is the
// app-server's error. Without a session: one upload of Codex's logs, no thread.
import { Context, Effect, Layer } from "effect"
import type { RequestError } from "../appserver/errors.js"
import type { LeaseError } from "../appserver/ClientPool.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import { Settings } from "../config/Settings.js"
import { ApprovalPrompts, type DiagnosticsApproval, type DiagnosticsThread } from "../ports/ApprovalPrompts.js"
import type { RuntimeRefusal } from "../session/SessionRuntime.js"
import { SessionRuntime } from "../session/SessionRuntime.js"
import type { SessionState } from "../session/SessionState.js"
import { type MirrorError, TranscriptMirror } from "../session/TranscriptMirror.js"
import { DiagnosticsNotApproved, DiagnosticsUploadFailed, NoDiagnosticsThread, SubThreadsUnknown } from "./errors.js"

export * from "./errors.js"

export interface DiagnosticsOptions {
  /** the session whose threads go; absent: Codex's logs alone, no thread */
  readonly sessionId?: string | undefined
  /** the bound thread alone, not its spawned sub-agent threads */
  readonly threadOnly?: boolean | undefined
  /** sent as the upload's reason */
  readonly note?: string | undefined
  /** Codex's logs with each upload (default true) */
  readonly includeLogs?: boolean | undefined
  /** Codex's feedback classification (default "bug") */
  readonly classification?: string | undefined
}

export interface UploadedThread extends DiagnosticsThread {
  /** the id Codex returns for the upload */
  readonly uploadId: string
  /** how to open the thread locally: `codex resume <thread-id>` (with its CODEX_HOME when that is not the user's) */
  readonly resume: string
}

/** What an upload would send: the threads by id, and the request the person deciding is asked (counts, no ids). */
export interface DiagnosticsPlan {
  /** one `feedback/upload` each, in this order; empty: one upload of Codex's logs without a thread */
  readonly threads: ReadonlyArray<DiagnosticsThread>
  readonly approval: DiagnosticsApproval
}

export interface DiagnosticsReport {
  readonly sessionId: string | undefined
  /** the channel the session's replies go to */
  readonly channel: string
  /** the CODEX_HOME the threads live in */
  readonly codexHome: string
  readonly threads: ReadonlyArray<UploadedThread>
  /** the upload id of Codex's logs, when no thread was sent */
  readonly logsUploadId: string | undefined
}

export type DiagnosticsError =
  | DiagnosticsNotApproved
  | DiagnosticsUploadFailed
  | NoDiagnosticsThread
  | SubThreadsUnknown
  | MirrorError
  | RuntimeRefusal
  | LeaseError

export interface DiagnosticsService {
  /** what an upload would send, asked of nobody and sent nowhere */
  readonly plan: (options?: DiagnosticsOptions) => Effect.Effect<DiagnosticsPlan, DiagnosticsError>
  /** asks through ApprovalPrompts, then uploads what the plan names (S36) */
  readonly upload: (options?: DiagnosticsOptions) => Effect.Effect<DiagnosticsReport, DiagnosticsError>
}

export class Diagnostics extends Context.Tag("codex-harness/Diagnostics")<Diagnostics, DiagnosticsService>() {}

export const destination = "OpenAI, through Codex's feedback upload (feedback/upload)"
export const defaultClassification = "bug"

/** bounds of the sub-thread enumeration: more than this fails closed rather than sending a partial set */
export const subThreadBounds = { pageSize: 100, maxPages: 10 } as const

/** Every thread spawned under `threadId`, at any depth, as Codex lists them. */
export const subThreads = (connection: AppServerConnection, threadId: string) =>
  Effect.gen(function* () {
    const found: Array<DiagnosticsThread> = []
    let cursor: string | undefined
    for (let page = 0; page < subThreadBounds.maxPages; page++) {
      const listed = yield* connection.request("thread/list", {
        ancestorThreadId: threadId,
        // every provider's threads: without it Codex lists only the connection's default provider's (S14)
        modelProviders: [],
        limit: subThreadBounds.pageSize,
        ...(cursor !== undefined ? { cursor } : {})
      })
      for (const thread of listed.data) {
        found.push({ threadId: thread.id, role: "subAgent", parentThreadId: thread.parentThreadId ?? undefined })
      }
      cursor = listed.nextCursor ?? undefined
      if (cursor === undefined) return found
    }
    return yield* Effect.fail(`more than ${subThreadBounds.pageSize * subThreadBounds.maxPages} sub-agent threads`)
  }).pipe(
    Effect.mapError((e: RequestError | string) => new SubThreadsUnknown({ threadId, reason: typeof e === "string" ? e : e.message }))
  )

export const make = Effect.gen(function* () {
  const settings = yield* Settings
  const runtimes = yield* SessionRuntime
  const mirror = yield* TranscriptMirror
  // who decides, as provided where the layer is built (the declining default when nobody is)
  const prompts = yield* ApprovalPrompts
  const channel = settings.channel ?? "terminal"

  /** the session's state and a lease on its connection (a fresh runtime without a session) */
  const open = (sessionId: string | undefined) =>
    Effect.gen(function* () {
      const state: SessionState = sessionId === undefined ? {} : (yield* mirror.read(sessionId)).state
      if (sessionId !== undefined && state.binding === undefined) return yield* new NoDiagnosticsThread({ sessionId })
      const leased = sessionId === undefined ? yield* runtimes.leaseFresh : yield* runtimes.lease(sessionId, state)
      return { state, ...leased }
    })

  const planOn = (
    opened: Effect.Effect.Success<ReturnType<typeof open>>,
    options: DiagnosticsOptions
  ): Effect.Effect<DiagnosticsPlan, SubThreadsUnknown> =>
    Effect.gen(function* () {
      const bound = opened.state.binding?.threadId
      const threads: Array<DiagnosticsThread> = []
      if (bound !== undefined) {
        threads.push({ threadId: bound, role: "bound" })
        if (options.threadOnly !== true) threads.push(...(yield* subThreads(opened.connection, bound)))
      }
      const approval: DiagnosticsApproval = {
        kind: "diagnostics",
        sessionId: options.sessionId,
        destination,
        sessionThread: bound !== undefined,
        subAgentThreads: threads.filter((t) => t.role === "subAgent").length,
        includeLogs: options.includeLogs ?? true,
        note: options.note
      }
      return { threads, approval } satisfies DiagnosticsPlan
    })

  const plan = (options: DiagnosticsOptions = {}) =>
    Effect.scoped(Effect.flatMap(open(options.sessionId), (opened) => planOn(opened, options))).pipe(
      Effect.withSpan("Diagnostics.plan")
    )

  const upload = (options: DiagnosticsOptions = {}) =>
    Effect.scoped(
      Effect.gen(function* () {
        const opened = yield* open(options.sessionId)
        const { approval: request, threads } = yield* planOn(opened, options)
        const decision = yield* prompts.ask(request).pipe(Effect.catchAll(() => Effect.succeed("noDecision" as const)))
        if (decision !== "allowOnce" && decision !== "allowAlways") {
          return yield* new DiagnosticsNotApproved({ decision, detail: "" })
        }
        const codexHome = opened.runtime.codexHome
        const resumePrefix = codexHome === runtimes.userCodexHome ? "" : `CODEX_HOME=${codexHome} `
        const send = (threadId: string | undefined) =>
          opened.connection.request("feedback/upload", {
            classification: options.classification ?? defaultClassification,
            includeLogs: request.includeLogs,
            ...(threadId !== undefined ? { threadId } : {}),
            ...(request.note !== undefined ? { reason: request.note } : {}),
            tags: { source: "codex-harness", ...(options.sessionId !== undefined ? { session_id: options.sessionId } : {}) }
          }).pipe(Effect.either)
        if (threads.length === 0) {
          const sent = yield* send(undefined)
          if (sent._tag === "Left") return yield* new DiagnosticsUploadFailed({ reason: reasonOf(sent.left), uploaded: [] })
          return { sessionId: undefined, channel, codexHome, threads: [], logsUploadId: sent.right.threadId } satisfies DiagnosticsReport
        }
        // every thread is tried (one failing does not hide which others went), in the order the plan lists them
        const results = yield* Effect.forEach(threads, (thread) => Effect.map(send(thread.threadId), (sent) => ({ thread, sent })))
        const uploaded: Array<UploadedThread> = []
        for (const { sent, thread } of results) {
          if (sent._tag === "Right") uploaded.push({ ...thread, uploadId: sent.right.threadId, resume: `${resumePrefix}codex resume ${thread.threadId}` })
        }
        const failed = results.find((r) => r.sent._tag === "Left")
        if (failed !== undefined && failed.sent._tag === "Left") {
          return yield* new DiagnosticsUploadFailed({
            threadId: failed.thread.threadId,
            reason: reasonOf(failed.sent.left),
            uploaded: uploaded.map((t) => t.threadId)
          })
        }
        return { sessionId: options.sessionId, channel, codexHome, threads: uploaded, logsUploadId: undefined } satisfies DiagnosticsReport
      })
    ).pipe(Effect.withSpan("Diagnostics.upload"))

  return { plan, upload } satisfies DiagnosticsService
})

/** the app-server's own words for a refused request */
const reasonOf = (error: RequestError): string => ("rpcMessage" in error ? error.rpcMessage : error.message)

export const layer: Layer.Layer<Diagnostics, never, Settings | SessionRuntime | TranscriptMirror> = Layer.effect(Diagnostics, make)
