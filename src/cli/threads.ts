// `codex-harness threads list|show|branch|archive`: native Codex threads under the supervision CODEX_HOME (S14-S17).
// Listing and showing are passive reads; every refusal (active, owned, unconfirmed, remote, disabled) is one line.
// Loaded when one of them runs; their flags are in commands/threads.ts.
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Console, Effect, Layer, Option } from "effect"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import { ArchiveGuard } from "../supervision/ArchiveGuard.js"
import { Branching } from "../supervision/Branching.js"
import * as NodeCatalogs from "../nodes/NodeCatalogs.js"
import * as NodePairing from "../nodes/NodePairing.js"
import { Catalog, type CatalogRow } from "../supervision/Catalog.js"
import { RemoteCatalogs } from "../supervision/RemoteCatalogs.js"
import * as Supervision from "../supervision/layer.js"
import * as ApprovalPromptsCli from "./approvalPrompts.js"
import type { ArchiveOptions, BranchOptions, ListOptions, ShowOptions } from "./commands/threads.js"
import type { CatalogRow as WireRow } from "../../schemas/control.js"
import * as Connect from "./connect.js"

/** a catalog row, read here or received from a serve (where absent fields are left out) */
type ThreadRow = CatalogRow | typeof WireRow.Type
import { toSettings } from "./settings.js"
import * as TerminalDelivery from "./TerminalDelivery.js"

/** Runs `use` with the supervision services over the live harness. */
const withSupervision = <A, E>(
  options: ListOptions,
  use: Effect.Effect<A, E, Catalog | Branching | ArchiveGuard>
) =>
  Effect.flatMap(toSettings(options), (settings) =>
    // paired nodes that name their app-server contribute metadata-only rows (S17)
    Effect.flatMap(NodePairing.list(settings.stateDir).pipe(Effect.orElseSucceed(() => [])), (nodes) =>
    use.pipe(
      Effect.provide(
        Supervision.layer.pipe(
          Layer.provideMerge(
            Live.layer(settings, undefined, { probeCodex: false }).pipe(
              Layer.provide(TerminalDelivery.layer({ json: options.json })),
              // nothing here runs a turn, so no approval is asked; should one come, it is refused
              Layer.provide(ApprovalPromptsCli.fixed("deny"))
            )
          )
        )
      ),
      // around the layer too: the Catalog reads the reference when it is built
      Effect.provideService(
        RemoteCatalogs,
        NodeCatalogs.fromNodes(nodes, (name) => Effect.option(NodePairing.token(settings.stateDir, name)).pipe(Effect.provide(NodeFileSystem.layer)))
      )
    )))

const when = (seconds: number | undefined) => (seconds === undefined ? "-" : new Date(seconds * 1000).toISOString())
const oneLine = (text: string, max = 60) => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

const rowLine = (row: ThreadRow) =>
  [
    row.threadId,
    row.remote ? `${row.node} (remote, metadata only)` : row.node,
    row.status,
    row.model ?? "-",
    row.modelProvider ?? "-",
    when(row.updatedAt),
    oneLine(row.title) || "-"
  ].join("  ")

const printListing = (options: ListOptions, listing: { readonly rows: ReadonlyArray<ThreadRow>; readonly truncated: boolean }) =>
    Effect.gen(function* () {
      if (options.json) return yield* Console.log(JSON.stringify(listing))
      // stdout stays the rows alone (scriptable); the empty case is said on stderr
      if (listing.rows.length === 0) yield* Console.error("no native threads (that are not archived) in this CODEX_HOME")
      for (const row of listing.rows) yield* Console.log(rowLine(row))
      if (listing.truncated) yield* Console.error("codex-harness: the catalog was cut at its safety limit; the newest threads are shown")
    })

export const list = (options: ListOptions) =>
  Connect.orLocal(
    options,
    false,
    (client) => Effect.flatMap(client.ListThreads(), (listing) => printListing(options, listing)),
    withSupervision(options, Effect.flatMap(Effect.flatMap(Catalog, (c) => c.list), (listing) => printListing(options, listing)))
  )

export const show = (options: ShowOptions) =>
  Connect.orLocal(
    options,
    false,
    (client) => Effect.flatMap(client.ShowThread({ thread: options.threadId }), (row) => printRow(options, row)),
    withSupervision(options, Effect.flatMap(Effect.flatMap(Catalog, (c) => c.show(options.threadId)), (row) => printRow(options, row)))
  )

const printRow = (options: ShowOptions, row: ThreadRow) =>
    Effect.gen(function* () {
      if (options.json) return yield* Console.log(JSON.stringify(row))
      const lines: Array<[string, string]> = [
        ["thread", row.threadId],
        ["node", row.remote ? `${row.node} (remote: metadata only; continue and archive are unavailable)` : row.node],
        ["status", row.status === "notLoaded" ? "notLoaded (activity unknown)" : row.status],
        ["title", row.title],
        ["model", row.model ?? "-"],
        ["provider", row.modelProvider ?? "-"],
        ["cwd", row.cwd ?? "-"],
        ["source", row.source],
        ["created", when(row.createdAt)],
        ["updated", when(row.updatedAt)],
        ["forked from", row.forkedFromId ?? "-"],
        ["parent", row.parentThreadId ?? "-"]
      ]
      for (const [label, value] of lines) yield* Console.log(`${label}: ${value}`)
    })

/** A word as a POSIX shell reads it back: as it is when plain, else in single quotes. */
const shellWord = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)

/**
 * The `run` that continues the branch, ready to paste: the branch is a supervised chat in this state dir, so `run`
 * needs the same state dir, config, supervision home, provider and codex binary, or it looks for the session elsewhere
 * or cannot reach its locked thread. Paths are made absolute, so the line also works from another directory.
 */
const continueCommand = (options: BranchOptions, sessionId: string) => {
  const absolute = (value: Option.Option<string>) => Option.map(value, (p) => path.resolve(p))
  const carried: ReadonlyArray<readonly [string, Option.Option<string>]> = [
    ["--state-dir", absolute(options.stateDir)],
    ["--config", absolute(options.config)],
    ["--supervision-home", absolute(options.supervisionHome)],
    ["--provider-url", options.providerUrl],
    ["--provider-key-env", options.providerKeyEnv],
    ["--codex-bin", options.codexBin]
  ]
  const flags = carried.flatMap(([flag, value]) => (Option.isSome(value) ? [flag, value.value] : []))
  return ["codex-harness", "run", ...flags, "--session", sessionId, "PROMPT"].map(shellWord).join(" ")
}

/** What a branch decided, and how to continue it; nothing exists in Codex for it until its first turn (S15). */
const printBranched = (
  options: BranchOptions,
  made: { sessionId: string; sourceThreadId: string; lastTurnId: string | undefined; messages: number; truncated: boolean }
) =>
  Effect.gen(function* () {
    yield* Console.log(`session: ${made.sessionId}`)
    yield* Console.log(`branched from: ${made.sourceThreadId}${made.lastTurnId !== undefined ? ` (through turn ${made.lastTurnId})` : ""}`)
    yield* Console.log(`history: ${made.messages} messages${made.truncated ? " (bounded)" : ""}`)
    yield* Console.log("its first turn forks that snapshot and starts the chat's own model-locked thread")
    yield* Console.log(`continue with: ${continueCommand(options, made.sessionId)}`)
  })

export const branch = (options: BranchOptions) =>
  Connect.orLocal(
    options,
    true,
    (client) =>
      Effect.gen(function* () {
        const made = yield* client.Branch({ thread: options.threadId, ...(Option.isSome(options.session) ? { session: options.session.value } : {}) })
        if (options.json) return yield* Console.log(JSON.stringify(made))
        yield* printBranched(options, {
          sessionId: made.session_id,
          sourceThreadId: made.source_thread_id,
          lastTurnId: made.last_turn_id ?? undefined,
          messages: made.messages,
          truncated: made.truncated
        })
      }),
    branchLocal(options)
  )

const branchLocal = (options: BranchOptions) =>
  withSupervision(
    options,
    Effect.gen(function* () {
      const made = yield* Effect.flatMap(Branching, (b) =>
        b.branch(options.threadId, { sessionId: Option.getOrUndefined(options.session) }))
      if (options.json) return yield* Console.log(JSON.stringify(made))
      yield* printBranched(options, {
        sessionId: made.sessionId,
        sourceThreadId: made.sourceThreadId,
        lastTurnId: made.lastTurnId,
        messages: made.history.messages.length,
        truncated: made.history.truncated
      })
    })
  )

export const archive = (options: ArchiveOptions) =>
  Connect.orLocal(
    options,
    true,
    (client) =>
      Effect.gen(function* () {
        const done = yield* client.Archive({ thread: options.threadId, confirm_no_other_runner: options.confirm })
        if (options.json) return yield* Console.log(JSON.stringify(done))
        yield* Console.log(`archived: ${done.thread_id}`)
        for (const s of done.detached_sessions) yield* Console.log(`detached session: ${s}`)
      }),
    withSupervision(
      options,
      Effect.gen(function* () {
        const done = yield* Effect.flatMap(ArchiveGuard, (g) =>
          g.archive(options.threadId, { confirmNoOtherRunner: options.confirm }))
        if (options.json) return yield* Console.log(JSON.stringify(done))
        yield* Console.log(`archived: ${done.threadId}`)
        for (const s of done.detachedSessions) yield* Console.log(`detached session: ${s}`)
      })
    )
  )
