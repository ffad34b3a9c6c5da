// The built-in answers of a mock peer to the requests the harness sends (initialize, thread/start, thread/resume,
// thread/inject_items, turn/start, turn/interrupt), shaped like the real 0.171 server's, and the error for any other
// method. A script's own handler replaces one of these; these must never reach past the peer's environment into a test.
import { Effect } from "effect"
import type { TransportOptions } from "../../appserver/Transport.js"
import { invalidRequest, isRecord, type RpcFailure } from "./ClientMessages.js"
import type { Handler, TurnStartInput } from "./Script.js"
import { type ServerState, uuid } from "./ServerState.js"
import { CLI_VERSION, nowSeconds, openedThread, type StoredThread, turnObject } from "./Shapes.js"
import type { PeerTurns } from "./Turns.js"

/** what the default handlers of one peer work on */
export interface HandlerEnv {
  readonly state: ServerState
  readonly options: TransportOptions
  readonly codexHome: string
  /** threads started or resumed on this peer: only they can take a turn here */
  readonly loaded: Set<string>
  readonly turns: PeerTurns
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void>
}

export interface DefaultHandlers {
  /** the built-in handler of a method, if there is one */
  readonly get: (method: string) => Handler | undefined
  /** the real server's answer to a method it does not know */
  readonly unknownMethod: (method: string) => RpcFailure
}

const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

export const defaultHandlers = ({ state, options, codexHome, loaded, turns, notify }: HandlerEnv): DefaultHandlers => {
  const script = state.script
  const handlers: Readonly<Record<string, Handler>> = {
    initialize: (params) =>
      Effect.succeed({
        userAgent: `${str(params?.clientInfo?.name) ?? "codex"}/${CLI_VERSION} (Mock 1.0; x86_64) mock-app-server`,
        codexHome,
        platformFamily: "unix",
        platformOs: "linux"
      }),
    "thread/start": (params: Record<string, unknown> = {}, ctx) =>
      Effect.gen(function* () {
        const t: StoredThread = {
          id: uuid(state),
          model: str(params.model) ?? script.model ?? "mock-model",
          modelProvider: str(params.modelProvider) ?? script.modelProvider ?? "mock",
          cwd: str(params.cwd) ?? options.cwd ?? "/mock/workspace",
          ephemeral: params.ephemeral === true,
          createdAt: yield* nowSeconds,
          codexHome,
          preview: ""
        }
        state.threads.set(t.id, t)
        loaded.add(t.id)
        const result = yield* openedThread(t, params)
        yield* ctx.afterReply(notify("thread/started", { thread: result.thread }))
        return result
      }),
    "thread/resume": (params: Record<string, unknown> = {}) =>
      Effect.gen(function* () {
        const threadId = str(params.threadId)
        if (threadId === undefined) return yield* Effect.fail(invalidRequest("Invalid request: missing field `threadId`"))
        const t = state.threads.get(threadId)
        if (t === undefined) return yield* Effect.fail(invalidRequest(`no rollout found for thread id ${threadId}`))
        loaded.add(threadId)
        return yield* openedThread(t, params)
      }),
    // history for a thread this peer has loaded, before its next turn (S38, S15); the real server answers `{}`
    "thread/inject_items": (params: Record<string, unknown> = {}) => {
      const threadId = str(params.threadId)
      if (threadId === undefined) return Effect.fail(invalidRequest("Invalid request: missing field `threadId`"))
      return loaded.has(threadId) ? Effect.succeed({}) : Effect.fail(invalidRequest(`thread not found: ${threadId}`))
    },
    "turn/start": (params: TurnStartInput, ctx) =>
      Effect.gen(function* () {
        const threadId = str(params?.threadId)
        if (threadId === undefined) return yield* Effect.fail(invalidRequest("Invalid request: missing field `threadId`"))
        if (!loaded.has(threadId)) return yield* Effect.fail(invalidRequest(`thread not found: ${threadId}`))
        const active = turns.active(threadId)
        // like the real server, a turn/start during an active turn steers it and answers with that turn
        if (active !== undefined) return { turn: turnObject(active.turnId, "inProgress", active.startedAt) }
        const turnId = uuid(state)
        const startedAt = yield* nowSeconds
        yield* turns.open(threadId, { turnId, params, startedAt })
        const t = state.threads.get(threadId)
        if (t !== undefined && t.preview === "") {
          const first = params.input?.[0]
          if (isRecord(first) && typeof first.text === "string") t.preview = first.text
        }
        yield* ctx.afterReply(turns.begin(params, turnId, startedAt))
        return { turn: turnObject(turnId, "inProgress", startedAt) }
      }),
    "turn/interrupt": (params: Record<string, unknown> = {}, ctx) =>
      Effect.gen(function* () {
        const threadId = str(params.threadId) ?? ""
        const active = turns.active(threadId)
        if (active === undefined || active.turnId !== params.turnId) {
          return yield* Effect.fail(invalidRequest("no active turn to interrupt"))
        }
        yield* ctx.afterReply(turns.finish(threadId, { status: "interrupted" }))
        return {}
      })
  }
  const known = Object.keys(handlers)
  return {
    // own keys only: a client method named like `toString` is unknown, not Object.prototype's
    get: (method) => (Object.hasOwn(handlers, method) ? handlers[method] : undefined),
    unknownMethod: (method) =>
      invalidRequest(`Invalid request: unknown variant \`${method}\`, expected one of ${known.map((m) => `\`${m}\``).join(", ")}`)
  }
}
