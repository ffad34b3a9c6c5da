// Owns one attempt on a paired node (S26): a relay to the node (NodeRelay), an isolated app-server of its own (never a
// pooled client: nothing else shares it, so the remote environment it registers retires with it), the node registered
// as that app-server's environment, and the turns that run their commands there. Model auth and the app-server stay
// with the harness; only exec traffic crosses to the node. Side questions and approvals fail closed (not placement-
// bound). A lost link ends the attempt: the running turn is interrupted, its remote processes are ended, and every later
// call fails with NodeDisconnected; a reconnect is a fresh attempt (open again). Never falls back to host execution.
// Its turns are ordinary turns: the thread is opened and the turn followed by the same functions as a local turn's
// (src/turn/TurnRunner), with the node's environment as the thread's environment.
import { Duration, Effect, type Option, type Redacted, type Scope } from "effect"
import * as crypto from "node:crypto"
import type { SandboxMode, ThreadItem } from "../../schemas/protocol.js"
import * as Connection from "../appserver/AppServerConnection.js"
import type { RequestError } from "../appserver/errors.js"
import { Transport, type TransportOptions } from "../appserver/Transport.js"
import * as TurnRunner from "../turn/TurnRunner.js"
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
  /** the thread's sandbox on the node; default `read-only`, the harness's own default */
  readonly sandbox?: SandboxMode | undefined
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

export const defaults = { registrationTimeout: Duration.seconds(15), sandbox: "read-only" } as const

const sideQuestion = "side questions are not available in a node attempt (not placement-bound); declined"
const approval = "approvals are not available in a node attempt; declined"

/** The commands of a turn's completed items, as the node ran them. */
export const commandsOf = (items: ReadonlyArray<ThreadItem>): ReadonlyArray<NodeCommand> =>
  items.flatMap((item) =>
    item.type === "commandExecution" && "command" in item
      ? [{ command: item.command, cwd: item.cwd, output: item.aggregatedOutput ?? "", exitCode: item.exitCode ?? null }]
      : []
  )

/** Opens the attempt; it ends with the Scope (app-server stopped, registration gone, node processes ended). */
export const open = (options: AttemptOptions): Effect.Effect<NodeAttempt, NodeUnreachable | RequestError, Scope.Scope | Transport> =>
  Effect.gen(function* () {
    const attemptId = crypto.randomUUID()
    const environmentId = `node-${options.node}-${attemptId.slice(0, 8)}`
    // acquired first, so it closes last: the app-server is gone before the relay ends what it left on the node
    const relay = yield* NodeRelay.make({ node: options.node, url: options.url, token: options.token, ...options.relay })
    const transport = yield* Transport
    const { url: _ignored, ...spawnOptions } = { clientName: "codex-harness-node", ...options.appServer }
    const handle = yield* transport.spawn(spawnOptions).pipe(
      Effect.mapError((e) => new NodeUnreachable({ node: options.node, reason: `the attempt's app-server did not start: ${e.message}` }))
    )
    const connection = yield* Connection.make(handle, spawnOptions)

    const fail = (message: string) => Effect.fail({ code: -32001, message })
    yield* connection.handle("item/tool/requestUserInput", { handle: () => fail(sideQuestion) })
    yield* connection.handle("mcpServer/elicitation/request", { handle: () => fail(sideQuestion) })
    yield* connection.handle("item/commandExecution/requestApproval", { handle: () => fail(approval) })
    yield* connection.handle("item/fileChange/requestApproval", { handle: () => fail(approval) })
    yield* connection.handle("item/permissions/requestApproval", { handle: () => fail(approval) })

    // registration: `environment/add` answers at once; `environment/info` is what proves the node answers through the
    // relay. A failure here is the attempt's error, never a turn on the harness's own machine.
    const unreachable = (reason: string) => new NodeUnreachable({ node: options.node, reason })
    yield* connection.request("environment/add", { environmentId, execServerUrl: relay.url }).pipe(
      Effect.mapError((e) => unreachable(`environment/add: ${e.message}`))
    )
    yield* connection.request("environment/info", { environmentId }, {
      timeout: options.registrationTimeout ?? defaults.registrationTimeout
    }).pipe(
      Effect.mapError((e) => unreachable(`environment/info: ${e.message}`)),
      Effect.raceFirst(Effect.flatMap(relay.lost, (reason) => Effect.fail(unreachable(reason))))
    )

    const disconnected = (reason: string) => new NodeDisconnected({ node: options.node, reason })
    const lostNow = Effect.flatMap(relay.lost, (reason) => Effect.fail(disconnected(reason)))

    const runTurn = (input: TurnInput) =>
      Effect.gen(function* () {
        if (yield* relay.isLost) return yield* lostNow
        const settings: TurnRunner.ThreadSettings = {
          cwd: input.cwd,
          approvalPolicy: "never",
          sandbox: input.sandbox ?? defaults.sandbox
        }
        const opened = yield* TurnRunner.openThread(connection, settings, undefined, {
          environments: [{ environmentId, cwd: input.cwd }]
        })
        // the turn cannot finish without its node: on a lost link the runner is interrupted, which interrupts the
        // turn on the app-server (bounded), and the loss is the attempt's error
        const outcome = yield* TurnRunner.runTurn(connection, opened.threadId, [{ type: "text", text: input.prompt }], settings).pipe(
          Effect.raceFirst(lostNow)
        )
        if (outcome.status === "failed") {
          return yield* new NodeTurnFailed({ node: options.node, reason: outcome.error ?? "failed" })
        }
        if (yield* relay.isLost) return yield* lostNow
        return {
          threadId: outcome.threadId,
          turnId: outcome.turnId,
          finalText: outcome.finalText ?? "",
          commands: commandsOf(outcome.items)
        } satisfies NodeTurn
      })

    return { node: options.node, attemptId, environmentId, relay, connection, runTurn } satisfies NodeAttempt
  })
