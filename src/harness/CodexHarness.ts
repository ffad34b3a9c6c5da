// The harness's front door for embedders and the CLI: run a turn for a session. It leases the shared client, resumes
// or starts the session's bound thread, runs the turn and mirrors the prompt and the final reply into the session.
// It never talks to the wire itself; the connection does.
import { Context, Duration, Effect, Layer } from "effect"
import * as path from "node:path"
import type { AskForApproval, SandboxMode } from "../../schemas/protocol.js"
import type { SessionRecord } from "../../schemas/session.js"
import * as CodexArgs from "../appserver/CodexArgs.js"
import { ClientPool, type ClientSpec, type LeaseError } from "../appserver/ClientPool.js"
import type { RequestError } from "../appserver/errors.js"
import { type InvalidSessionId, SessionStore, type SessionStoreError } from "../session/SessionStore.js"
import * as TurnRunner from "../turn/TurnRunner.js"

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
  readonly model?: string | undefined
  readonly approvalPolicy: AskForApproval
  readonly sandbox: SandboxMode
  readonly requestTimeout?: Duration.DurationInput | undefined
}

export class Settings extends Context.Tag("codex-harness/HarnessSettings")<Settings, HarnessSettings>() {}

export const defaultSettings = (stateDir: string, cwd: string): HarnessSettings => ({
  stateDir,
  cwd,
  approvalPolicy: "never",
  sandbox: "read-only"
})

/** The app-server client a set of settings asks for. Pure. */
export const clientSpec = (settings: HarnessSettings): ClientSpec => {
  const codexHome =
    settings.codexHome ?? (settings.providerUrl !== undefined ? path.join(settings.stateDir, "codex-home") : undefined)
  return {
    codexBin: settings.codexBin,
    codexHome,
    args: settings.providerUrl !== undefined ? CodexArgs.providerArgs(settings.providerUrl, settings.model) : [],
    env: settings.providerUrl !== undefined ? CodexArgs.providerEnv() : undefined,
    requestTimeout: settings.requestTimeout
  }
}

export interface TurnRequest {
  readonly sessionId: string
  readonly prompt: string
  readonly onEvent?: TurnRunner.EventSink | undefined
}

export type HarnessError = LeaseError | RequestError | SessionStoreError | InvalidSessionId

export interface CodexHarnessService {
  readonly runTurn: (request: TurnRequest) => Effect.Effect<TurnRunner.TurnOutcome, HarnessError>
}

export class CodexHarness extends Context.Tag("codex-harness/CodexHarness")<CodexHarness, CodexHarnessService>() {}

const now = () => new Date().toISOString()

const lastBinding = (records: ReadonlyArray<SessionRecord>) => {
  for (let i = records.length - 1; i >= 0; i--) {
    const record = records[i]!
    if (record._tag === "binding") return record
  }
  return undefined
}

export const make = Effect.gen(function* () {
  const pool = yield* ClientPool
  const store = yield* SessionStore
  const settings = yield* Settings
  const spec = clientSpec(settings)
  const poolKey = "default"
  const threadSettings: TurnRunner.ThreadSettings = {
    cwd: settings.cwd,
    approvalPolicy: settings.approvalPolicy,
    sandbox: settings.sandbox,
    model: settings.model
  }

  const runTurn = ({ onEvent = () => Effect.void, prompt, sessionId }: TurnRequest) =>
    Effect.scoped(
      Effect.gen(function* () {
        const session = yield* store.read(sessionId)
        for (const bad of session.corrupt) {
          yield* Effect.logWarning(`${store.locate(sessionId)}:${bad.line}: skipped a corrupt record (${bad.reason})`)
        }
        // the prompt is recorded before anything can fail on the Codex side, so it is never lost
        yield* store.append(sessionId, { _tag: "user", at: now(), text: prompt })
        const connection = yield* pool.lease(poolKey, spec)
        const bound = lastBinding(session.records)
        const thread = yield* TurnRunner.openThread(connection, threadSettings, bound?.threadId)
        yield* onEvent({ type: "thread.opened", thread })
        if (bound?.threadId !== thread.threadId) {
          yield* store.append(sessionId, {
            _tag: "binding",
            at: now(),
            threadId: thread.threadId,
            model: thread.model,
            modelProvider: thread.modelProvider
          })
        }
        const outcome = yield* TurnRunner.runTurn(
          connection,
          thread.threadId,
          [{ type: "text", text: prompt }],
          threadSettings,
          onEvent
        )
        if (outcome.finalText !== undefined) {
          yield* store.append(sessionId, {
            _tag: "assistant",
            at: now(),
            text: outcome.finalText,
            threadId: outcome.threadId,
            turnId: outcome.turnId
          })
        }
        yield* store.append(sessionId, {
          _tag: "turn",
          at: now(),
          threadId: outcome.threadId,
          turnId: outcome.turnId,
          status: outcome.status,
          ...(outcome.error !== undefined ? { error: outcome.error } : {})
        })
        return outcome
      })
    ).pipe(Effect.withSpan("CodexHarness.runTurn", { attributes: { sessionId } }))

  return { runTurn } satisfies CodexHarnessService
})

export const layer: Layer.Layer<CodexHarness, never, ClientPool | SessionStore | Settings> = Layer.effect(CodexHarness, make)
