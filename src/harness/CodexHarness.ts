// The harness's front door for embedders and the CLI: run a turn for a session. It leases the shared client, resumes
// or starts the session's bound thread with the resend rules, builds the instructions, serves the harness tools,
// delivers what is visible and mirrors the turn into the session file. It never talks to the wire itself.
import { Cause, Context, type Duration, Effect, Exit, Layer, Option, Queue, type Scope } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { AskForApproval, SandboxMode, ThreadItem } from "../../schemas/protocol.js"
import type { SessionRecord } from "../../schemas/session.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import * as CodexArgs from "../appserver/CodexArgs.js"
import { ClientPool, type ClientSpec, type LeaseError } from "../appserver/ClientPool.js"
import { type RequestError, RpcError } from "../appserver/errors.js"
import { CompactionFence } from "../compaction/CompactionFence.js"
import { Delivery, type Reply } from "../ports/Delivery.js"
import { type LifecycleEvent, PluginHooks } from "../ports/PluginHooks.js"
import { type InvalidSessionId, SessionStore, type SessionStoreError } from "../session/SessionStore.js"
import { type SessionState, sessionState } from "../session/SessionState.js"
import type { SupervisedBindingDrift, SupervisionDisabled } from "../supervision/errors.js"
import { connectionFor, type SupervisionSettings } from "../supervision/SupervisionSettings.js"
import * as HarnessTools from "../tools/HarnessTools.js"
import * as ToolBridge from "../tools/ToolBridge.js"
import { dynamicToolSpecs, type HarnessTool } from "../tools/ToolCatalog.js"
import * as Instructions from "../turn/Instructions.js"
import * as TurnRunner from "../turn/TurnRunner.js"
import { type TurnExtension, TurnExtensions } from "./TurnExtensions.js"

export type VisibleReplies = "automatic" | "message_tool"

export interface HarnessSettings {
  /** where session files (and, with a provider URL, Codex's own home) live */
  readonly stateDir: string
  /** the workspace the agent works in */
  readonly cwd: string
  /** CODEX_HOME for the app-server; default: `<stateDir>/codex-home` with a provider URL, else the user's own */
  readonly codexHome?: string | undefined
  readonly codexBin?: string | undefined
  /** any OpenAI Responses API server; without it Codex uses the user's own configuration and login */
  readonly providerUrl?: string | undefined
  /** the default model; a session's own choice (`/model`, `--model`) wins over it */
  readonly model?: string | undefined
  readonly approvalPolicy: AskForApproval
  readonly sandbox: SandboxMode
  readonly approvalsReviewer?: "user" | "auto_review" | undefined
  readonly serviceTier?: string | undefined
  /** S18: "automatic" delivers the final text; "message_tool" only what the agent sends with message(action=send) */
  readonly visibleReplies?: VisibleReplies | undefined
  /** S6: "compatibility" keeps the gateway's own prompt: no harness developer instructions */
  readonly route?: Instructions.Route | undefined
  /** S8: turns without a native filesystem environment get the AGENTS.md snapshot as developer instructions */
  readonly policyRestricted?: boolean | undefined
  /** the name of the channel replies go to, for the delivery instructions */
  readonly channel?: string | undefined
  /** the heartbeat monitor's cron scratch file, appended to heartbeat prompts when present (S19) */
  readonly cronScratchPath?: string | undefined
  readonly requestTimeout?: Duration.DurationInput | undefined
  readonly idleTimeToLive?: Duration.DurationInput | undefined
  /** S35: what messages arriving during a run do, and the steer batching window */
  readonly queueMode?: "steer" | "followup" | "collect" | undefined
  readonly quietWindow?: Duration.DurationInput | undefined
  /** S20: the native hooks relayed per thread; default: all four, without PermissionRequest unless the policy is never */
  readonly nativeHookEvents?: ReadonlyArray<"pre_tool_use" | "post_tool_use" | "permission_request" | "stop"> | undefined
  /** S28: how long and how many allow-always decisions are kept */
  readonly allowAlwaysWindow?: Duration.DurationInput | undefined
  readonly allowAlwaysMaxEntries?: number | undefined
  /** S33: a question nobody answers is cancelled after this long (default 10 minutes) */
  readonly questionTimeout?: Duration.DurationInput | undefined
  /** MCP servers the app-server starts (stdio), by name; their tools are advertised as `mcp__<name>` */
  readonly mcpServers?: Readonly<Record<string, McpServer>> | undefined
  /** S37: manual compaction timeout and interrupt grace */
  readonly compactionTimeout?: Duration.DurationInput | undefined
  readonly interruptGrace?: Duration.DurationInput | undefined
  /** S14-S17: native thread supervision (discovery, continue as branch, archive guard); off when absent */
  readonly supervision?: SupervisionSettings | undefined
}

export interface McpServer {
  readonly command: string
  readonly args?: ReadonlyArray<string> | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
  /** "approve" skips Codex's per-call approval of the server's tools */
  readonly defaultToolsApprovalMode?: "approve" | "prompt" | undefined
}

export class Settings extends Context.Tag("codex-harness/HarnessSettings")<Settings, HarnessSettings>() {}

/** The app-server client a set of settings asks for. Pure. */
export const clientSpec = (settings: HarnessSettings): ClientSpec => {
  const codexHome =
    settings.codexHome ?? (settings.providerUrl !== undefined ? path.join(settings.stateDir, "codex-home") : undefined)
  return {
    codexBin: settings.codexBin,
    codexHome,
    args: [
      ...(settings.providerUrl !== undefined ? CodexArgs.providerArgs(settings.providerUrl, settings.model) : []),
      ...CodexArgs.mcpServerArgs(settings.mcpServers ?? {})
    ],
    env: settings.providerUrl !== undefined ? CodexArgs.providerEnv() : undefined,
    requestTimeout: settings.requestTimeout
  }
}

/**
 * What a session's next start, resume or turn resends (S12): the user's model choice is never replaced by the default,
 * and a locked (supervised) binding sends no model at all (S13). Pure.
 */
export const threadSettingsFor = (
  settings: HarnessSettings,
  state: SessionState,
  requestedModel?: string | undefined
): TurnRunner.ThreadSettings => ({
  cwd: settings.cwd,
  approvalPolicy: settings.approvalPolicy,
  sandbox: settings.sandbox,
  approvalsReviewer: settings.approvalsReviewer,
  serviceTier: settings.serviceTier,
  model: state.binding?.locked === true ? undefined : (requestedModel ?? state.modelChoice ?? settings.model)
})

export type TurnKind = "user" | "heartbeat"

export interface TurnRequest {
  readonly sessionId: string
  readonly prompt: string
  readonly kind?: TurnKind | undefined
  /** an explicit model choice: recorded for the session and kept on later turns (S12) */
  readonly model?: string | undefined
  /** "plan": Codex's Plan collaboration mode, where the agent may ask with request_user_input (S33) */
  readonly collaboration?: "default" | "plan" | undefined
  readonly onEvent?: TurnRunner.EventSink | undefined
}

export interface TurnResult extends TurnRunner.TurnOutcome {
  /** whether the final text went to Delivery (false in message_tool mode or when there was none) */
  readonly delivered: boolean
  readonly media: ReadonlyArray<string>
  readonly model: string | undefined
}

export type HarnessError =
  | LeaseError
  | RequestError
  | SessionStoreError
  | InvalidSessionId
  | SupervisionDisabled
  | SupervisedBindingDrift

/** What a session's threads are started with: the harness tool surface and the thread-level instructions. */
export interface ThreadSetup {
  readonly tools: ReadonlyArray<HarnessTool>
  readonly instructions: Instructions.TurnInstructions
  readonly extras: TurnRunner.ThreadExtras
}

/** What became of messages sent into a running turn (S35). */
export type SteerOutcome =
  | { readonly _tag: "Steered"; readonly turnId: string }
  /** the active turn refuses steering (a compaction or review turn): send the messages after it ends */
  | { readonly _tag: "NotSteerable"; readonly reason: string }
  /** nothing is running for the session (or the turn just ended): start a turn instead */
  | { readonly _tag: "NoActiveTurn" }

export interface ActiveTurn {
  readonly connection: AppServerConnection
  readonly threadId: string
  readonly turnId: string
}

export interface CodexHarnessService {
  readonly runTurn: (request: TurnRequest) => Effect.Effect<TurnResult, HarnessError>
  /** adds messages to the session's running turn with turn/steer (expectedTurnId), in order, as one request */
  readonly steer: (
    sessionId: string,
    texts: ReadonlyArray<string>
  ) => Effect.Effect<SteerOutcome, RequestError | SessionStoreError | InvalidSessionId>
  /**
   * A plain-text reply for a question the session's running turn is waiting on (S33): true when a pending question took
   * it as its answer; false when nothing was asked (send it as a message instead, so it is never lost).
   */
  readonly answer: (sessionId: string, text: string) => Effect.Effect<boolean>
  /** the session's running turn, if any */
  readonly activeTurn: (sessionId: string) => Effect.Effect<ActiveTurn | undefined>
  /** hands a lifecycle observation to the PluginHooks observers (asynchronously; never blocks) */
  readonly observe: (event: LifecycleEvent) => Effect.Effect<void>
  /** makes another kind of turn (a manual compaction) the session's running turn for the Scope, so `steer` reaches it */
  readonly trackTurn: (sessionId: string, turn: ActiveTurn) => Effect.Effect<void, never, Scope.Scope>
  /** records the user's model choice for the session without running a turn (`/model NAME`) */
  readonly chooseModel: (sessionId: string, model: string) => Effect.Effect<void, SessionStoreError | InvalidSessionId>
  /** what a new thread of this session starts with (a supervised branch starts its canonical thread with it, S15) */
  readonly threadSetup: (sessionId: string, kind?: TurnKind) => Effect.Effect<ThreadSetup>
}

export class CodexHarness extends Context.Tag("codex-harness/CodexHarness")<CodexHarness, CodexHarnessService>() {}

const now = () => new Date().toISOString()

/** Lifecycle events waiting for a slow observer before the newest are dropped. */
export const observerBacklog = 1_024

const textOf = (item: ThreadItem, field: "text" | "summary"): string | undefined => {
  const value = (item as Record<string, unknown>)[field]
  if (typeof value === "string") return value
  if (Array.isArray(value)) return value.filter((v) => typeof v === "string").join("\n")
  return undefined
}

/** Transcript records for what a turn emitted besides the final text: reasoning, plans, compaction, media (S39, S41). */
export const itemRecords = (outcome: TurnRunner.TurnOutcome, at: string): ReadonlyArray<SessionRecord> => {
  const ref = { at, threadId: outcome.threadId, turnId: outcome.turnId }
  const records: Array<SessionRecord> = []
  for (const item of outcome.items) {
    switch (item.type) {
      case "reasoning": {
        const text = textOf(item, "summary")
        if (text !== undefined && text !== "") records.push({ _tag: "reasoning", ...ref, text })
        break
      }
      case "plan": {
        const text = textOf(item, "text")
        if (text !== undefined) records.push({ _tag: "plan", ...ref, text })
        break
      }
      case "contextCompaction":
        records.push({ _tag: "compaction", ...ref, status: "completed" })
        break
      case "imageGeneration": {
        const saved = (item as { savedPath?: unknown }).savedPath
        if (typeof saved === "string") records.push({ _tag: "media", ...ref, path: saved })
        break
      }
    }
  }
  return records
}

const mediaOf = (items: ReadonlyArray<ThreadItem>): ReadonlyArray<string> =>
  items.flatMap((item) => {
    const saved = item.type === "imageGeneration" ? (item as { savedPath?: unknown }).savedPath : undefined
    return typeof saved === "string" ? [saved] : []
  })

const readCronScratch = (file: string | undefined) =>
  file === undefined
    ? Effect.succeed(undefined)
    : Effect.promise(() => fs.readFile(file, "utf8").catch(() => undefined)).pipe(
      Effect.map((text) => (text === undefined || text.trim() === "" ? undefined : text))
    )

export const make = Effect.gen(function* () {
  const pool = yield* ClientPool
  const store = yield* SessionStore
  const delivery = yield* Delivery
  const fence = yield* CompactionFence
  const hooks = yield* Effect.serviceOption(PluginHooks)
  const extensions = Option.getOrElse(yield* Effect.serviceOption(TurnExtensions), () => [] as ReadonlyArray<TurnExtension>)
  // lifecycle observations go through a bounded queue to one observer fiber: an observer can never block a turn, and
  // when it falls behind by `observerBacklog` events the newest are dropped (and logged) rather than memory growing
  const observations = yield* Queue.dropping<LifecycleEvent>(observerBacklog)
  if (Option.isSome(hooks)) {
    const observer = hooks.value
    yield* Queue.take(observations).pipe(
      Effect.flatMap((event) => observer.observe(event).pipe(Effect.catchAllCause((cause) => Effect.logWarning("a lifecycle observer failed", cause)))),
      Effect.forever,
      Effect.forkScoped
    )
  }
  const observe = (event: LifecycleEvent) =>
    Option.isNone(hooks)
      ? Effect.void
      : Queue.offer(observations, event).pipe(
        Effect.flatMap((accepted) => (accepted ? Effect.void : Effect.logWarning(`lifecycle observer backlog full; dropped ${event.type}`)))
      )
  const settings = yield* Settings
  const spec = clientSpec(settings)
  const visibleReplies = settings.visibleReplies ?? "automatic"
  // threads running a heartbeat turn right now (set before turn/start, so no tool call can race it):
  // heartbeat_respond answers only there
  const heartbeatThreads = new Set<string>()

  const deliver = (reply: Reply) =>
    delivery.deliver(reply).pipe(
      Effect.catchAll((error) => Effect.logWarning(error.message)),
      Effect.withSpan("Delivery.deliver")
    )

  const toolsFor = (sessionId: string): ReadonlyArray<HarnessTool> => [
    ...(visibleReplies === "message_tool"
      ? [
        HarnessTools.messageTool((text, call) =>
          deliver({ sessionId, text, media: [], source: "message_tool" }).pipe(
            Effect.zipRight(store.append(sessionId, { _tag: "message", at: now(), threadId: call.threadId, turnId: call.turnId, text })),
            Effect.mapError((error) => ({ message: error.message }))
          )
        )
      ]
      : []),
    HarnessTools.heartbeatRespondTool(
      (call) => heartbeatThreads.has(call.threadId),
      (outcome, message, call) =>
        Effect.gen(function* () {
          if (outcome === "notify" && message !== undefined) {
            yield* deliver({ sessionId, text: message, media: [], source: "heartbeat" })
          }
          yield* store
            .append(sessionId, {
              _tag: "heartbeat",
              at: now(),
              threadId: call.threadId,
              turnId: call.turnId,
              outcome,
              ...(message !== undefined ? { message } : {})
            })
            .pipe(Effect.catchAll((error) => Effect.logWarning(error.message)))
        })
    )
  ]

  const chooseModel = (sessionId: string, model: string) => store.append(sessionId, { _tag: "model", at: now(), model })

  const threadSetup = (sessionId: string, kind: TurnKind = "user") =>
    Effect.gen(function* () {
      const tools = [...toolsFor(sessionId), ...extensions.flatMap((e) => e.tools?.(sessionId) ?? [])]
      const extensionConfig = yield* Effect.forEach(extensions, (e) => e.threadConfig?.(sessionId) ?? Effect.succeed({}))
      const workspace = yield* Instructions.readWorkspace(settings.cwd)
      const cronScratch = kind === "heartbeat" ? yield* readCronScratch(settings.cronScratchPath) : undefined
      const instructions = Instructions.buildTurnInstructions({
        route: settings.route ?? "native",
        turnKind: kind,
        policyRestricted: settings.policyRestricted ?? false,
        workspace,
        tools: {
          dynamicToolNames: tools.map((t) => t.name),
          memoryToolsAvailable: false,
          sessionsYieldAvailable: false,
          messageToolMode: visibleReplies === "message_tool"
        },
        delivery: { channel: settings.channel ?? "terminal", visibleReplies },
        ...(kind === "heartbeat" ? { heartbeat: cronScratch !== undefined ? { cronScratch } : {} } : {})
      })
      const threadConfig = Object.assign({}, instructions.threadStart.config, ...extensionConfig)
      const extras: TurnRunner.ThreadExtras = {
        developerInstructions: instructions.threadStart.developerInstructions,
        config: Object.keys(threadConfig).length > 0 ? threadConfig : undefined,
        dynamicTools: dynamicToolSpecs(tools)
      }
      return { tools, instructions, extras } satisfies ThreadSetup
    })

  // each session's running turn: set when turn/start is answered, removed when the turn is over
  const activeTurns = new Map<string, ActiveTurn>()

  const notSteerable = (error: RpcError) => {
    const info = (error.data as { codexErrorInfo?: { activeTurnNotSteerable?: unknown } } | undefined)?.codexErrorInfo
    return info?.activeTurnNotSteerable !== undefined || /ActiveTurnNotSteerable|cannot steer/i.test(error.rpcMessage)
  }
  const turnGone = (error: RpcError) => /no active turn|expected active turn id/i.test(error.rpcMessage)

  const steer = (sessionId: string, texts: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const active = activeTurns.get(sessionId)
      if (active === undefined || texts.length === 0) return { _tag: "NoActiveTurn" } as SteerOutcome
      const outcome = yield* active.connection
        .request("turn/steer", {
          threadId: active.threadId,
          expectedTurnId: active.turnId,
          input: texts.map((text) => ({ type: "text" as const, text }))
        })
        .pipe(
          Effect.map((r): SteerOutcome => ({ _tag: "Steered", turnId: r.turnId })),
          Effect.catchIf(
            (error): error is RpcError => error instanceof RpcError && (notSteerable(error) || turnGone(error)),
            (error) =>
              Effect.succeed<SteerOutcome>(
                notSteerable(error) ? { _tag: "NotSteerable", reason: error.rpcMessage } : { _tag: "NoActiveTurn" }
              )
          )
        )
      if (outcome._tag === "Steered") {
        for (const text of texts) yield* store.append(sessionId, { _tag: "user", at: now(), text })
      }
      return outcome
    }).pipe(Effect.withSpan("CodexHarness.steer", { attributes: { sessionId } }))

  const runTurn = ({ collaboration, kind = "user", model: requestedModel, onEvent = () => Effect.void, prompt, sessionId }: TurnRequest) =>
    Effect.scoped(
      Effect.gen(function* () {
        const session = yield* store.read(sessionId)
        for (const bad of session.corrupt) {
          yield* Effect.logWarning(`${store.locate(sessionId)}:${bad.line}: skipped a corrupt record (${bad.reason})`)
        }
        const state = sessionState(session.records)
        if (requestedModel !== undefined && requestedModel !== state.modelChoice) yield* chooseModel(sessionId, requestedModel)
        // the prompt is recorded before anything can fail on the Codex side, so it is never lost
        yield* store.append(sessionId, { _tag: "user", at: now(), text: prompt, ...(kind !== "user" ? { kind } : {}) })

        const locked = state.binding?.locked === true
        const threadSettings = threadSettingsFor(settings, state, requestedModel)
        const { extras, instructions, tools } = yield* threadSetup(sessionId, kind)

        // a supervised branch stays on its private connection; any drift fails closed (S15)
        const route = yield* connectionFor(settings.supervision, sessionId, state.binding, spec)
        const connection: AppServerConnection = yield* pool.lease(route.key, route.spec)
        const bound =
          state.binding !== undefined
            ? { threadId: state.binding.threadId, locked, replaceIfGone: !route.supervised }
            : undefined
        const thread = yield* TurnRunner.openThread(connection, threadSettings, bound, extras)
        yield* onEvent({ type: "thread.opened", thread })
        if (thread.replacedThreadId !== undefined) {
          const text = `The Codex thread ${thread.replacedThreadId} of this session no longer exists; continuing on a new thread.`
          yield* store.append(sessionId, { _tag: "notice", at: now(), text })
          yield* deliver({ sessionId, text, media: [], source: "notice" })
        }
        if (state.binding?.threadId !== thread.threadId) {
          yield* store.append(sessionId, {
            _tag: "binding",
            at: now(),
            threadId: thread.threadId,
            model: thread.model,
            modelProvider: thread.modelProvider,
            ...(locked && thread.replacedThreadId === undefined ? { locked } : {})
          })
        }
        yield* ToolBridge.install(connection, { sessionId, threadId: thread.threadId, tools })
        for (const extension of extensions) {
          if (extension.install !== undefined) yield* extension.install({ sessionId, threadId: thread.threadId, connection, observe })
        }

        // what has completed is kept, so a failure later in the turn cannot drop a finished reply
        let lastText: { readonly text: string; readonly turnId: string } | undefined
        // native compaction inside the turn: its start is mirrored when it begins, its end with the turn (S39)
        const compacting = new Set<string>()
        const input = Instructions.turnInput(instructions, prompt)
        let startedTurnId: string | undefined
        const follow: TurnRunner.EventSink = (event) => {
          if (event.type === "turn.started") {
            startedTurnId = event.turnId
            activeTurns.set(sessionId, { connection, threadId: thread.threadId, turnId: event.turnId })
            return observe({
              type: "llm_input",
              sessionId,
              threadId: thread.threadId,
              turnId: event.turnId,
              input: input.flatMap((i) => (i.type === "text" ? [i.text] : []))
            }).pipe(Effect.zipRight(onEvent(event)))
          }
          if (event.type !== "notification") return onEvent(event)
          const { method, params } = event.notification as {
            method: string
            params: { turnId?: string; item?: { type?: string; id?: string; text?: unknown } }
          }
          const item = params.item
          const where = { sessionId, threadId: thread.threadId, turnId: params.turnId ?? "" }
          if (method === "item/completed" && item?.type === "agentMessage" && typeof item.text === "string" && params.turnId !== undefined) {
            lastText = { text: item.text, turnId: params.turnId }
            return observe({ type: "llm_output", ...where, text: item.text }).pipe(Effect.zipRight(onEvent(event)))
          }
          if (method === "item/started" && item?.type === "contextCompaction" && item.id !== undefined && params.turnId !== undefined) {
            compacting.add(item.id)
            return store
              .append(sessionId, { _tag: "compaction", at: now(), threadId: thread.threadId, turnId: params.turnId, status: "started" })
              .pipe(
                Effect.catchAll((error) => Effect.logWarning(error.message)),
                Effect.zipRight(observe({ type: "before_compaction", ...where })),
                Effect.zipRight(onEvent(event))
              )
          }
          if (method === "hook/started" || method === "hook/completed") {
            const phase = method === "hook/started" ? "started" : "completed"
            return observe({ type: "agent_event", name: "codex_app_server.hook", sessionId, phase, payload: params }).pipe(
              Effect.zipRight(onEvent(event))
            )
          }
          if (method === "item/completed" && item?.type === "contextCompaction" && item.id !== undefined) {
            compacting.delete(item.id)
            return observe({ type: "after_compaction", ...where, status: "completed" }).pipe(Effect.zipRight(onEvent(event)))
          }
          return onEvent(event)
        }
        const defaultMode = Instructions.collaborationMode(instructions, { model: thread.model })
        const collaborationMode: Instructions.CollaborationMode | undefined = collaboration === "plan"
          ? {
            mode: "plan",
            settings: { model: thread.model, reasoning_effort: null, developer_instructions: defaultMode?.settings.developer_instructions ?? null }
          }
          : defaultMode
        if (kind === "heartbeat") heartbeatThreads.add(thread.threadId)
        // a manual compaction of this thread goes first (S37)
        yield* fence.pass(thread.threadId)
        const outcome = yield* TurnRunner.runTurn(
          connection,
          thread.threadId,
          input,
          threadSettings,
          follow,
          { locked, collaborationMode }
        ).pipe(
          Effect.tapError(() =>
            lastText === undefined || visibleReplies !== "automatic"
              ? Effect.void
              : deliver({ sessionId, text: lastText.text, media: [], source: "final" }).pipe(
                Effect.zipRight(
                  store.append(sessionId, {
                    _tag: "assistant",
                    at: now(),
                    threadId: thread.threadId,
                    turnId: lastText.turnId,
                    text: lastText.text,
                    delivered: true
                  })
                ),
                Effect.ignore
              )
          ),
          // a turn that ended by interruption or failure still gets its turn record
          Effect.onExit((exit) =>
            Exit.isSuccess(exit) || startedTurnId === undefined
              ? Effect.void
              : store
                .append(sessionId, {
                  _tag: "turn",
                  at: now(),
                  threadId: thread.threadId,
                  turnId: startedTurnId,
                  status: Exit.isInterrupted(exit) ? "interrupted" : "failed",
                  ...(Exit.isInterrupted(exit)
                    ? {}
                    : { error: Option.match(Cause.failureOption(exit.cause), { onNone: () => "failed", onSome: (e) => e.message }) })
                })
                .pipe(Effect.ignore)
          ),
          Effect.ensuring(
            Effect.sync(() => {
              heartbeatThreads.delete(thread.threadId)
              if (activeTurns.get(sessionId)?.threadId === thread.threadId) activeTurns.delete(sessionId)
            })
          )
        )

        // delivery first: transcript writes that fail afterwards cannot take the reply with them
        const media = mediaOf(outcome.items)
        const visibleText = visibleReplies === "automatic" && kind !== "heartbeat" ? outcome.finalText : undefined
        if (visibleText !== undefined || media.length > 0) {
          yield* deliver({ sessionId, text: visibleText, media: media.map((p) => ({ kind: "image", path: p })), source: "final" })
        }
        const at = now()
        if (outcome.finalText !== undefined) {
          yield* store.append(sessionId, {
            _tag: "assistant",
            at,
            threadId: outcome.threadId,
            turnId: outcome.turnId,
            text: outcome.finalText,
            delivered: visibleText !== undefined
          })
        }
        for (const record of itemRecords(outcome, at)) yield* store.append(sessionId, record)
        if (compacting.size > 0) {
          // started but never completed: the turn's own end is the compaction's terminal status
          const status = outcome.status === "interrupted" ? "interrupted" : "failed"
          yield* store.append(sessionId, { _tag: "compaction", at, threadId: outcome.threadId, turnId: outcome.turnId, status })
          yield* observe({ type: "after_compaction", sessionId, threadId: outcome.threadId, turnId: outcome.turnId, status })
        }
        yield* store.append(sessionId, {
          _tag: "turn",
          at,
          threadId: outcome.threadId,
          turnId: outcome.turnId,
          status: outcome.status,
          ...(outcome.error !== undefined ? { error: outcome.error } : {})
        })
        return { ...outcome, delivered: visibleText !== undefined, media, model: locked ? thread.model : threadSettings.model ?? thread.model }
      })
    ).pipe(Effect.withSpan("CodexHarness.runTurn", { attributes: { sessionId } }))

  const answer = (sessionId: string, text: string) =>
    Effect.gen(function* () {
      for (const extension of extensions) {
        if (extension.answer !== undefined && (yield* extension.answer(sessionId, text))) return true
      }
      return false
    })

  return {
    runTurn,
    chooseModel,
    threadSetup,
    steer,
    answer,
    activeTurn: (sessionId) => Effect.sync(() => activeTurns.get(sessionId)),
    observe,
    trackTurn: (sessionId, turn) =>
      Effect.acquireRelease(Effect.sync(() => void activeTurns.set(sessionId, turn)), () =>
        Effect.sync(() => {
          if (activeTurns.get(sessionId) === turn) activeTurns.delete(sessionId)
        }))
  } satisfies CodexHarnessService
})

export const layer: Layer.Layer<CodexHarness, never, ClientPool | SessionStore | Settings | Delivery | CompactionFence> = Layer.scoped(
  CodexHarness,
  make
)
