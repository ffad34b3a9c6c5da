// `codex-harness run`: through a serve, or in this process. Decided here, before anything of the local harness is
// loaded: a turn through a serve needs only the control API's client, and loading run.ts (the app-server transport, the
// hook relay, the session store, the schemas of the protocol and the config) cost a `run --connect` about 60-110 ms of
// its start-up for nothing (bench/connect-profile.ts).
import { Effect, Option } from "effect"
import type { RunOptions } from "./commands/run.js"
import * as Connect from "./serveTarget.js"
import { UsageError } from "./errors.js"
import { readPrompt } from "./runPrompt.js"

export const run = (options: RunOptions) =>
  Effect.gen(function* () {
    const prompt = yield* readPrompt(options.prompt)
    const given = Connect.runtimeFlagsGiven(options)
    if (Option.isSome(options.connect) && given.length > 0) {
      return yield* new UsageError({ line: `${given.join(", ")}: not with --connect (the service runs with its own settings)` })
    }
    // a serve running for the state dir takes the turn, unless this run names a runtime of its own
    const target = yield* Connect.target(options, given.length === 0)
    if (Option.isSome(target)) {
      const remote = yield* Effect.promise(() => import("./remote/asEffect.js"))
      return yield* remote.runThrough(target.value, {
        session: Option.getOrUndefined(options.session),
        last: options.last,
        prompt,
        model: Option.getOrUndefined(options.model),
        turnKind: Option.getOrUndefined(options.turnKind),
        approvals: options.approvals,
        json: options.json,
        outputLastMessage: Option.getOrUndefined(options.outputLastMessage)
      })
    }
    const approvals = options.approvals
    if (approvals === "ask") {
      return yield* new UsageError({ line: "--approvals ask waits for a client of `codex-harness serve`, and none runs for this state dir: use deny or allow" })
    }
    const local = yield* Effect.promise(() => import("./run.js"))
    return yield* local.runLocal(options, prompt, approvals)
  })
