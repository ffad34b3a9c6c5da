// The server-request side of a connection: handlers registered per method (and thread) with typed params and
// responses. Params are decoded once, here; a request nobody handles, or whose params cannot be read by a route that
// has no answer for that, gets a JSON-RPC error reply, so Codex is never left waiting. Routes live as long as the Scope
// they were installed in; newer routes win.
import { Deferred, Effect, Schema, type Scope } from "effect"
import type { ParseOptions } from "effect/SchemaAST"
import { ErrorCodes, type RequestId } from "../../schemas/jsonrpc.js"
import { registerForScope } from "./ScopedRegistration.js"
import {
  type ServerRequestMethod,
  type ServerRequestParams,
  type ServerRequestResponse,
  ServerRequests
} from "../../schemas/protocol.js"

/** What a handler fails with: becomes the JSON-RPC error reply. */
export interface HandlerFailure {
  readonly code: number
  readonly message: string
  readonly data?: unknown
}

export interface ServerRequestRoute<M extends ServerRequestMethod> {
  /** only requests about this thread (`params.threadId`); absent: any thread */
  readonly threadId?: string | undefined
  /** a further condition on the decoded params, checked after the thread */
  readonly when?: ((params: ServerRequestParams<M>) => boolean) | undefined
  readonly handle: (
    params: ServerRequestParams<M>,
    request: { readonly id: RequestId }
  ) => Effect.Effect<ServerRequestResponse<M>, HandlerFailure>
  /** the answer when the params do not decode (an explicit decline, say); default: a JSON-RPC invalid-params error */
  readonly invalid?: ((raw: unknown, problem: string) => Effect.Effect<ServerRequestResponse<M>>) | undefined
}

interface Installed {
  readonly method: string
  readonly threadId: string | undefined
  readonly when: ((params: unknown) => boolean) | undefined
  readonly handle: (params: unknown, request: { readonly id: RequestId }) => Effect.Effect<unknown, HandlerFailure>
  readonly invalid: ((raw: unknown, problem: string) => Effect.Effect<unknown>) | undefined
  /** done when the route's Scope closed: a handler still running then answers with an error */
  readonly removed: Deferred.Deferred<void>
}

const preserve: ParseOptions = { onExcessProperty: "preserve", errors: "first" }
const decoders = new Map(
  Object.entries(ServerRequests).map(([method, contract]) => [
    method,
    // per-method schemas in one map; a route sees its method's params type again through ServerRequestRoute<M>
    Schema.decodeUnknownEither(contract.params as Schema.Schema<unknown>, preserve)
  ] as const)
)

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

export interface Router {
  readonly install: <M extends ServerRequestMethod>(
    method: M,
    route: ServerRequestRoute<M>
  ) => Effect.Effect<void, never, Scope.Scope>
  /** the answer to a server request: the handler's result, or the error to reply with */
  readonly answer: (request: { readonly id: RequestId; readonly method: string; readonly params: unknown }) => Effect.Effect<unknown, HandlerFailure>
}

const noHandler = (method: string, threadId: unknown): HandlerFailure => ({
  code: ErrorCodes.methodNotFound,
  message: `no handler for ${method}${typeof threadId === "string" ? ` on thread ${threadId}` : ""} in this harness`
})

export const makeRouter = (): Router => {
  // newest first; replaced (never mutated) so a request in flight keeps the list it started with
  let routes: ReadonlyArray<Installed> = []

  // every turn installs a dozen routes and observers: registered in place (ScopedRegistration), on the hot path
  const install = <M extends ServerRequestMethod>(method: M, route: ServerRequestRoute<M>) =>
    Effect.flatMap(Deferred.make<void>(), (removed) => {
      const installed: Installed = {
        method,
        threadId: route.threadId,
        when: route.when as ((params: unknown) => boolean) | undefined,
        handle: route.handle as Installed["handle"],
        invalid: route.invalid as Installed["invalid"],
        removed
      }
      const remove = Effect.suspend(() => {
        routes = routes.filter((r) => r !== installed)
        return Effect.asVoid(Deferred.succeed(installed.removed, undefined))
      })
      return registerForScope(() => void (routes = [installed, ...routes]), remove)
    })

  const run = (route: Installed, method: string, work: Effect.Effect<unknown, HandlerFailure>) =>
    Effect.raceFirst(
      work,
      // the route's scope closed while its handler was still working: answer rather than leave Codex waiting
      Deferred.await(route.removed).pipe(
        Effect.zipRight(
          Effect.fail<HandlerFailure>({ code: ErrorCodes.internalError, message: `the handler for ${method} was removed before it answered` })
        )
      )
    )

  const answer = (request: { readonly id: RequestId; readonly method: string; readonly params: unknown }) =>
    Effect.suspend((): Effect.Effect<unknown, HandlerFailure> => {
      const { id, method, params } = request
      const threadId = isRecord(params) ? params.threadId : undefined
      const decode = decoders.get(method)
      const candidates = routes.filter((r) => r.method === method && (r.threadId === undefined || r.threadId === threadId))
      if (decode === undefined || candidates.length === 0) return Effect.fail(noHandler(method, threadId))
      const decoded = decode(params)
      if (decoded._tag === "Left") {
        const problem = decoded.left.message.split("\n")[0] ?? "invalid params"
        const route = candidates[0]!
        return route.invalid !== undefined
          ? run(route, method, route.invalid(params, problem))
          : Effect.fail({ code: ErrorCodes.invalidParams, message: `invalid ${method} params: ${problem}` })
      }
      const route = candidates.find((r) => r.when === undefined || r.when(decoded.right))
      if (route === undefined) return Effect.fail(noHandler(method, threadId))
      return run(route, method, Effect.suspend(() => route.handle(decoded.right, { id })))
    })

  return { install, answer }
}
