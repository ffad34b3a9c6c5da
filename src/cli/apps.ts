// `codex-harness apps list`: the `plugin/installed` snapshot of the runtime a session uses, and the harness's
// provisional decision for every app the config's `apps` section names (S2-S5), read-only: no thread is opened and
// nothing is installed or enabled. Loaded when the command runs; its flags are in commands/apps.ts.
import { Console, Effect, Layer, Option } from "effect"
import * as Live from "../../layers/internal/Live.js"
import { AppAdmission } from "../apps/AppAdmission.js"
import { SessionRuntime } from "../session/SessionRuntime.js"
import { sessionState } from "../session/SessionState.js"
import { TranscriptMirror } from "../session/TranscriptMirror.js"
import * as ApprovalPromptsCli from "./approvalPrompts.js"
import type { ListOptions } from "./commands/apps.js"
import { resolveSessionRef } from "./sessionRef.js"
import { toSettings } from "./settings.js"
import { terminalText as safeText } from "../platform/terminalText.js"
import * as TerminalDelivery from "./TerminalDelivery.js"

export const list = (options: ListOptions) =>
  Effect.gen(function* () {
    const settings = yield* toSettings(options)
    // an existing session by id or unique prefix; an unknown one is an error, not the runtime a new session would get
    const sessionId = Option.isSome(options.session) ? yield* resolveSessionRef(settings.stateDir, options.session.value) : undefined
    const services = Live.layer(settings, undefined, { probeCodex: false }).pipe(
      Layer.provide(TerminalDelivery.layer({ json: options.json })),
      Layer.provide(ApprovalPromptsCli.fixed("deny"))
    )
    const gate = yield* Effect.scoped(
      Effect.gen(function* () {
        const runtimes = yield* SessionRuntime
        // a session's recorded runtime, or the one a new session would get (an empty record)
        const state = sessionId !== undefined ? (yield* (yield* TranscriptMirror).read(sessionId)).state : sessionState([])
        const { connection, runtime } = sessionId === undefined ? yield* runtimes.leaseFresh : yield* runtimes.lease(sessionId, state)
        return yield* (yield* AppAdmission).prepare(connection, { poolKey: runtime.poolKey, cwd: settings.cwd })
      })
    ).pipe(Effect.provide(services))
    if (options.json) {
      return yield* Console.log(JSON.stringify({ type: "apps.list", snapshot: gate.snapshot, decisions: gate.decisions }))
    }
    const plugins = gate.snapshot.marketplaces.flatMap((m) => m.plugins.map((p) => ({ marketplace: m.name, plugin: p })))
    yield* Console.log(plugins.length === 0 ? "no installed plugins" : "installed plugins:")
    for (const { plugin } of plugins) {
      const state = [plugin.installed ? "installed" : "not installed", plugin.enabled ? "enabled" : "disabled"].join(", ")
      yield* Console.log(`  ${safeText(plugin.id)}  ${state}`)
    }
    if (gate.decisions.length === 0) {
      return yield* Console.log("the config names no apps (config `apps.plugins`): every app stays off")
    }
    yield* Console.log("configured apps:")
    for (const d of gate.decisions) {
      yield* Console.log(`  ${safeText(d.appId)} (${safeText(d.pluginId)}): ${d.admitted ? "admitted" : `not admitted: ${safeText(d.reason)}`}`)
    }
  })
