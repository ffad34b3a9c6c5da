// Which `codex-harness serve` a command runs through, if any: `--connect URL`, else the one running for the state dir
// (its serve.json: private, naming a live process). The token never comes from argv: $CODEX_HARNESS_TOKEN, else the
// state dir's serve.token (same machine). A refusal of the service keeps its meaning at the CLI: a usage refusal exits
// 2, anything else 1, each as one line.
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { Effect, Option, Schema, type Scope } from "effect"
import type { ControlFailure } from "../../schemas/control.js"
import * as ControlClient from "../control/ControlClient.js"
import { UsageError } from "./errors.js"
import * as Failures from "./remote/failures.js"

export class ServeUnreachable extends Schema.TaggedError<ServeUnreachable>()("ServeUnreachable", {
  url: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return Failures.unreachableLine(this.url, this.reason)
  }
}

export class ServeRefusedToken extends Schema.TaggedError<ServeRefusedToken>()("ServeRefusedToken", { url: Schema.String }) {
  override get message() {
    return Failures.refusedTokenLine(this.url)
  }
}

export { checkUrl, controlUrl, tokenEnv } from "./remote/target.js"
export { type ConnectOptions, runtimeFlagsGiven, target } from "./serveTarget.js"
import { type ConnectOptions, runtimeFlagsGiven, target } from "./serveTarget.js"

/** the innermost message of an error and its causes ("Error in socket" says less than "self-signed certificate") */
const reasonOf = (error: unknown): string => {
  let current: unknown = error
  let reason = "unknown error"
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const message = (current as { readonly message?: unknown }).message
    if (typeof message === "string" && message !== "") reason = message
    current = (current as { readonly cause?: unknown }).cause
  }
  return reason
}

/** the WebSocket upgrade was answered 401: the serve is there and the token is not its own */
const refusedToken = (error: unknown) => Failures.isRefusedToken(reasonOf(error))

/** the serve closed the WebSocket with 1009: a message of ours was past its request bound (serve's --max-request-bytes) */
const refusedSize = (error: unknown) => /\b1009\b/.test(reasonOf(error))

/** ControlFailure as the CLI reports it: its usage refusals are usage errors (exit 2), and so is a request too large. */
const asCli = (error: ControlFailure | { readonly _tag: "RpcClientError"; readonly message: string }, url: string) =>
  error._tag === "ControlFailure"
    ? error.code === "usage" ? new UsageError({ line: error.message }) : error
    : refusedToken(error)
    ? new ServeRefusedToken({ url })
    : refusedSize(error)
    ? new UsageError({ line: Failures.tooLargeLine(url) })
    : new ServeUnreachable({ url, reason: reasonOf(error) })

/** Runs `use` with a client of `target`, connected for its duration. */
export const withClient = <A, E, R>(
  target: ControlClient.Target,
  use: (client: ControlClient.Client) => Effect.Effect<A, E, R>
) =>
  Effect.scoped(Effect.flatMap(ControlClient.make(target), use)).pipe(
    Effect.provide(NodeSocket.layerWebSocketConstructor),
    Effect.catchIf(
      (e): e is Extract<E, ControlFailure | { readonly _tag: "RpcClientError"; readonly message: string }> =>
        typeof e === "object" && e !== null && "_tag" in e && (e._tag === "ControlFailure" || e._tag === "RpcClientError"),
      (e) => Effect.fail(asCli(e, target.url))
    )
  ) as Effect.Effect<A, Exclude<E, ControlFailure | { readonly _tag: "RpcClientError" }> | ControlFailure | UsageError | ServeUnreachable | ServeRefusedToken, Exclude<R, Scope.Scope>>

/**
 * A command through the serve when there is one to use, else `local`: `--connect` always (refused next to a runtime
 * flag, which the service would not apply); a serve found for the state dir only when `find` and no runtime flag is
 * given (such a command runs on its own, as before the serve).
 */
export const orLocal = <A, E, R, A2, E2, R2>(
  options: ConnectOptions,
  find: boolean,
  remote: (client: ControlClient.Client) => Effect.Effect<A, E, R>,
  local: Effect.Effect<A2, E2, R2>
) =>
  Effect.gen(function* () {
    const given = runtimeFlagsGiven(options)
    if (Option.isSome(options.connect) && given.length > 0) {
      return yield* new UsageError({ line: `${given.join(", ")}: not with --connect (the service runs with its own settings)` })
    }
    const chosen = yield* target(options, find && given.length === 0)
    return Option.isSome(chosen) ? yield* withClient(chosen.value, remote) : yield* local
  }).pipe(Effect.provide(NodeFileSystem.layer))
