// The throwaway PostgreSQL of bench/cluster.ts: the tests' own (test/support/postgres.ts: npm's PostgreSQL 18 unless
// CODEX_HARNESS_PG_BIN names another bin dir; as root the server runs as `nobody`), with two settings for measuring:
// `pg_stat_statements` preloaded (statements per turn, by statement) and a `fast` stop. Its calls as promises, for the
// bench's async code; `stop` is idempotent and removes the dir, and a process exit that skips it still stops the server.
import { Effect, Exit, Scope } from "effect"
import { freePort, startPostgres as startServer } from "../../test/support/postgres.js"

export { freePort }

export interface Postgres {
  readonly port: number
  readonly dir: string
  /** the role that owns the databases, its password (given to runners in $PGPASSWORD, never on argv) */
  readonly user: string
  readonly password: string
  /** a fresh database owned by the role; returns postgres://USER@127.0.0.1:PORT/NAME (no password) */
  readonly createDatabase: (name: string) => Promise<string>
  /** SQL as the superuser over the unix socket in `database` (default `postgres`), printed as `psql -At` would */
  readonly psql: (sql: string, database?: string) => Promise<string>
  /** the postmaster's pid (from postmaster.pid) */
  readonly postmasterPid: () => number | undefined
  readonly stop: () => Promise<void>
  /** whether pg_stat_statements could be loaded */
  readonly statements: boolean
  /** the server's version, e.g. 18.4, and where its binaries came from */
  readonly version: string
  readonly source: string
}

export const startPostgres = async (): Promise<Postgres> => {
  const scope = Effect.runSync(Scope.make())
  const close = Scope.close(scope, Exit.void)
  const pg = await Effect.runPromise(
    // room for the scale part's 20 runners: each may open up to 12 connections (its pool's bound); the default 100 is
    // what breaks first there (bench/README.md)
    startServer({ statements: true, stopMode: "fast", prefix: "codex-bench-pg-", settings: { max_connections: 320 } }).pipe(
      Scope.extend(scope),
      Effect.onError(() => close)
    )
  )
  return {
    port: pg.port,
    dir: pg.dir,
    user: pg.user,
    password: pg.password,
    createDatabase: (name) =>
      Effect.runPromise(pg.createDatabase(name)).then((url) => {
        const u = new URL(url)
        u.password = ""
        return u.toString()
      }),
    psql: (sql, database) => Effect.runPromise(pg.psql(sql, database)),
    postmasterPid: pg.postmasterPid,
    stop: () => Effect.runPromise(close),
    statements: pg.statements,
    version: pg.version,
    source: pg.binaries.source === "npm" ? "npm" : pg.binaries.bin
  }
}
