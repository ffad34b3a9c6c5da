// `codex-harness serve`: what it accepts. The service itself is ../serve.ts, loaded when it runs.
import { Command, Options } from "@effect/cli"
import * as Opts from "../options.js"
import { lazy } from "./lazy.js"

const config = {
  ...Opts.workspace,
  ...Opts.state,
  ...Opts.codex,
  ...Opts.appServer,
  ...Opts.provider,
  ...Opts.policy,
  ...Opts.supervision,
  listen: Options.text("listen").pipe(
    Options.withDescription("where to listen: HOST:PORT (default 127.0.0.1:4780; port 0 picks a free one) or unix:PATH"),
    Options.withDefault("127.0.0.1:4780")
  ),
  tlsCert: Options.text("tls-cert").pipe(Options.withDescription("serve HTTPS/WSS with this PEM certificate (with --tls-key)"), Options.optional),
  tlsKey: Options.text("tls-key").pipe(Options.withDescription("the PEM private key of --tls-cert"), Options.optional),
  insecureRemote: Options.boolean("insecure-remote").pipe(
    Options.withDescription("listen on a non-loopback address without TLS (the token then crosses the network in clear)")
  ),
  answerTimeout: Options.integer("answer-timeout").pipe(
    Options.withDescription("seconds an approval or question waits for a client before it is declined"),
    Options.withDefault(300)
  ),
  shutdownGrace: Options.integer("shutdown-grace").pipe(
    Options.withDescription("on SIGTERM, seconds running turns get to finish before they are interrupted"),
    Options.withDefault(10)
  ),
  maxRequestBytes: Options.integer("max-request-bytes").pipe(
    Options.withDescription(
      "the largest control request read: a POST /rpc body (larger: 413) and a WebSocket message (larger: the socket is closed, code 1009); default 4194304, or serve.maxRequestBytes in the config"
    ),
    Options.optional
  ),
  cluster: Options.text("cluster").pipe(
    Options.withDescription(
      "join a cluster of runners over this PostgreSQL database (postgres://USER@HOST:PORT/DB; the password from $PGPASSWORD, never the command line): sessions and their transcripts live in the database, each session runs on one runner at a time"
    ),
    Options.optional
  ),
  runnerListen: Options.text("runner-listen").pipe(
    Options.withDescription("with --cluster: where this runner listens for the other runners (HOST:PORT)"),
    Options.optional
  ),
  runnerAdvertise: Options.text("runner-advertise").pipe(
    Options.withDescription("with --cluster: the address the other runners use, when it differs from --runner-listen"),
    Options.optional
  ),
  retention: Options.float("retention").pipe(
    Options.withDescription(
      "with --cluster: hours the turn ledger, the cluster's processed messages and transcript records older than a session's snapshot are kept (the session's state and recent records always stay); default 24"
    ),
    Options.optional
  ),
  databaseConnections: Options.integer("database-connections").pipe(
    Options.withDescription(
      "with --cluster: the most PostgreSQL connections this process opens (a runner needs at least 4: two hold its locks); default 12. The database's max_connections must cover every runner's"
    ),
    Options.optional
  ),
  otlp: Options.text("otlp").pipe(
    Options.withDescription("export traces to this OTLP/HTTP collector (default: $OTEL_EXPORTER_OTLP_ENDPOINT when set)"),
    Options.optional
  )
}

export type ServeOptions = Command.Command.ParseConfig<typeof config>

export const command = Command.make("serve", config, (options) => lazy(() => import("../serve.js"), (m) => m.serve(options))).pipe(
  Command.withDescription("run the harness as a long-lived service: a control API (HTTP and WebSocket) and the Control UI")
)
