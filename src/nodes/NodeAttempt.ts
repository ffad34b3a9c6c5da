// Owns one attempt on a paired node (S26): a relay to the node (NodeRelay), an isolated app-server of its own (never a
// pooled client: nothing else shares it, so the remote environment it registers retires with it), the node registered
// as that app-server's environment, and the turns that run their commands there. Model auth and the app-server stay
// with the harness; only exec traffic crosses to the node. Side questions and approvals fail closed (not placement-
// bound). A lost link ends the attempt: the running turn is interrupted, its remote processes are ended, and every later
// call fails with NodeDisconnected; a reconnect is a fresh attempt (open again). Never falls back to host execution.
import { Duration, Effect, Option, type Redacted, type Scope, Stream } from "effect"
import * as crypto from "node:crypto"
import * as Connection from "../appserver/AppServerConnection.js"
import type { RequestError } from "../appserver/errors.js"
import * as Notifications from "../appserver/Notifications.js"
import { Transport, type TransportOptions } from "../appserver/Transport.js"
import { NodeDisconnected, NodeTurnFailed, NodeUnreachable } from "./errors.js"
import * as NodeRelay from "./NodeRelay.js"

export interface AttemptOptions {
  readonly node: string
  readonly url: string
  readonly token: Option.Option<Redacted.Redacted<string>>
  /** how the attempt's own app-server is started (binary, CODEX_HOME, provider `-c` args, env); never a `url` */
  readonly appServer: TransportOptions & Connection.ConnectionOptions
  readonly relay?: Partial<Pick<NodeRelay.RelayOptions, "pingInterval" | "cleanupTimeout" | "cleanupTries">> | undefined
  /** how long the node gets to answer the registration check */
  readonly registrationTimeout?: Duration.DurationInput | undefined
}

export interface NodeCommand {
  readonly command: string
  readonly cwd: string | undefined
  readonly output: string
  readonly exitCode: number | null
}

export interface NodeTurn {
  readonly threadId: string
  readonly turnId: string
  readonly finalText: string
  readonly commands: ReadonlyArray<NodeCommand>
}

export interface TurnInput {
  readonly prompt: string
  /** the working directory on the node */
  readonly cwd: string
  /** the thread's sandbox on the node (`read-only`, `workspace-write`, `danger-full-access`); default: the config's */
  readonly sandbox?: string | undefined
}

export interface NodeAttempt {
  readonly node: string
  readonly attemptId: string
  /** the id the node is registered under on the attempt's app-server */
  readonly environmentId: string
  readonly relay: NodeRelay.NodeRelay
  readonly connection: Connection.AppServerConnection
  /** a turn whose commands run on the node; the thread is new for each call */
  readonly runTurn: (input: TurnInput) => Effect.Effect<NodeTurn, NodeDisconnected | NodeTurnFailed | RequestError, Scope.Scope>
}

export const defaults = { registrationTimeout: Duration.seconds(15), interruptWait: Duration.seconds(2) } as const

const sideQuestion = "side questions are not available in a node attempt (not placement-bound); declined"
const approval = "approvals are not available in a node attempt; declined"

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

/** Opens the attempt; it ends with the Scope (app-server stopped, registration gone, node processes ended). */
export const open = (options: AttemptOptions): Effect.Effect<NodeAttempt, NodeUnreachable | RequestError, Scope.Scope | Transport> =>
  Effect.gen(function* () {
    const attemptId = crypto.randomUUID()
    const environmentId = `node-${options.node}-${attemptId.slice(0, 8)}`
    // acquired first, so it closes last: the app-server is gone before the relay ends what it left on the node
    const relay = yield* NodeRelay.make({ node: options.node, url: options.url, token: options.token, ...options.relay })
    const transport = yield* Transport
    const { url: _ignored, ...spawnOptions } = options.appServer
    const handle = yield* transport.spawn(spawnOptions).pipe(
      Effect.mapError((e) => new NodeUnreachable({ node: options.node, reason: `the attempt's app-server did not start: ${e.message}` }))
    )
    const connection = yield* Connection.make(handle, { clientName: "codex-harness-node", ...options.appServer })

    const fail = (message: string) => Effect.fail({ code: -32001, message })
    yield* connection.handle("item/tool/requestUserInput", { handle: () => fail(sideQuestion) })
    yield* connection.handle("mcpServer/elicitation/request", { handle: () => fail(sideQuestion) })
    yield* connection.handle("item/commandExecution/requestApproval", { handle: () => fail(approval) })
    yield* connection.handle("item/fileChange/requestApproval", { handle: () => fail(approval) })
    yield* connection.handle("item/permissions/requestApproval", { handle: () => fail(approval) })

    // registration: `environment/add` answers at once; `environment/info` is what proves the node answers through the
    // relay. A failure here is the attempt's error, never a turn on the harness's own machine.
    const unreachable = (reason: string) => new NodeUnreachable({ node: options.node, reason })
    yield* connection.requestRaw("environment/add", { environmentId, execServerUrl: relay.url }).pipe(
      Effect.mapError((e) => unreachable(`environment/add: ${e.message}`))
    )
    yield* connection.requestRaw("environment/info", { environmentId }, {
      timeout: options.registrationTimeout ?? defaults.registrationTimeout
    }).pipe(
      Effect.mapError((e) => unreachable(`environment/info: ${e.message}`)),
      Effect.raceFirst(Effect.flatMap(relay.lost, (reason) => Effect.fail(unreachable(reason))))
    )

    const disconnected = (reason: string) => new NodeDisconnected({ node: options.node, reason })

    const runTurn = (input: TurnInput) =>
      Effect.gen(function* () {
        const lostAlready = yield* relay.isLost
        if (lostAlready) return yield* Effect.flatMap(relay.lost, (r) => Effect.fail(disconnected(r)))
        const events = yield* connection.subscribe()
        const started = yield* connection.requestRaw("thread/start", {
          cwd: input.cwd,
          environments: [{ environmentId, cwd: input.cwd }],
          approvalPolicy: "never",
          ...(input.sandbox !== undefined ? { sandbox: input.sandbox } : {})
        })
        const threadId = str(isRecord(started) && isRecord(started.thread) ? started.thread.id : undefined)
        if (threadId === undefined) return yield* new NodeTurnFailed({ node: options.node, reason: "thread/start answered no thread id" })
        const turn = yield* connection.requestRaw("turn/start", { threadId, input: [{ type: "text", text: input.prompt, text_elements: [] }] })
        const turnId = str(isRecord(turn) && isRecord(turn.turn) ? turn.turn.id : undefined) ?? ""
        const commands: Array<NodeCommand> = []
        let finalText = ""
        const completed = events.pipe(
          Stream.filter((n) => isRecord(n.params) && n.params.threadId === threadId),
          Stream.tap((n) =>
            Effect.sync(() => {
              if (n._tag !== "ItemCompleted") return
              const item = n.params.item
              if (item.type === "commandExecution") {
                commands.push({
                  command: item.command,
                  cwd: str(item.cwd),
                  output: item.aggregatedOutput ?? "",
                  exitCode: item.exitCode ?? null
                })
              } else if (item.type === "agentMessage") finalText = str(item.text) ?? finalText
            })
          ),
          Stream.filter(Notifications.is("TurnCompleted")),
          Stream.runHead
        )
        const outcome = yield* Effect.raceFirst(
          completed.pipe(Effect.map((n) => ({ _tag: "done" as const, n }))),
          relay.lost.pipe(Effect.map((reason) => ({ _tag: "lost" as const, reason })))
        )
        if (outcome._tag === "lost") {
          // the turn cannot finish without its node: stop it on the app-server (bounded), then report the loss
          yield* connection.requestRaw("turn/interrupt", { threadId, turnId }, { timeout: defaults.interruptWait }).pipe(Effect.ignore)
          return yield* disconnected(outcome.reason)
        }
        const turnInfo = Option.getOrUndefined(outcome.n)?.params.turn
        if (turnInfo?.status === "failed") {
          return yield* new NodeTurnFailed({ node: options.node, reason: JSON.stringify(turnInfo.error ?? "failed") })
        }
        if (yield* relay.isLost) return yield* Effect.flatMap(relay.lost, (r) => Effect.fail(disconnected(r)))
        return { threadId, turnId, finalText, commands } satisfies NodeTurn
      })

    return { node: options.node, attemptId, environmentId, relay, connection, runTurn } satisfies NodeAttempt
  })
