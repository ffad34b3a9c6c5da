// A throwaway PostgreSQL for a test file: Debian's server binaries (/usr/lib/postgresql/*/bin, which .ci/run installs
// when missing) run a fresh cluster in a temp dir on a free loopback port, its unix socket inside that dir, TCP with a
// scram password for a role and database of its own, fsync off (nothing here needs to survive a crash of the machine).
// About 1 s to start. As root, initdb and the server run as the `postgres` user (initdb refuses root), from `/` (that
// user cannot read root's cwd), with the data and log in a dir that user owns (see ../shared/CLUSTER-NOTES.md). Every
// wait is bounded: pg_ctl's own -w/-t receipts and a timeout on every command. The scope's end stops the server
// (-m immediate) and removes the dir; a process exit that skips the scope still stops it (a best-effort exit hook).
import { Effect, Exit, Scope } from "effect"
import { execFile, execFileSync } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"

export interface Postgres {
  /** postgres://USER:PASSWORD@127.0.0.1:PORT/DB, for the role that owns the database */
  readonly url: string
  readonly port: number
  /** a further database owned by the same role (a clean slate for one test), as a URL */
  readonly createDatabase: (name: string) => Effect.Effect<string, Error>
  /** runs SQL as the superuser over the unix socket; returns psql's unaligned, tuples-only output */
  readonly psql: (sql: string, database?: string) => Effect.Effect<string, Error>
  /** stops the server now (-m immediate, as a crash would); the scope's end is then a no-op for it */
  readonly stop: Effect.Effect<void>
  readonly dir: string
}

const needed = ["initdb", "pg_ctl", "psql"] as const

/** The newest installed server's bin dir with every binary needed, or an error naming what is missing. */
export const findBinaries = (root = "/usr/lib/postgresql"): string | Error => {
  const versions = fs.existsSync(root)
    ? fs.readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a))
    : []
  for (const v of versions) {
    const bin = path.join(root, v, "bin")
    if (needed.every((b) => fs.existsSync(path.join(bin, b)))) return bin
  }
  const seen = versions.length === 0 ? `no ${root}/*/bin` : `${versions.map((v) => `${root}/${v}/bin`).join(", ")} lacks one of them`
  return new Error(
    `PostgreSQL server binaries not found: ${needed.join(", ")} are needed (${seen}); ` +
      "install Debian's server package (as root: apt-get install -y postgresql), as .ci/run does"
  )
}

const run = (file: string, args: ReadonlyArray<string>, timeoutMs: number, env?: NodeJS.ProcessEnv) =>
  Effect.async<string, Error>((resume) => {
    const child = execFile(file, [...args], { cwd: "/", timeout: timeoutMs, killSignal: "SIGKILL", env: env ?? process.env }, (error, stdout, stderr) => {
      if (error === null) return resume(Effect.succeed(stdout))
      const why = error.killed ? `timed out after ${timeoutMs} ms` : `exit ${error.code ?? error.signal}`
      resume(Effect.fail(new Error(`${path.basename(file)} ${args.join(" ")}: ${why}: ${stderr.trim() || stdout.trim()}`)))
    })
    return Effect.sync(() => void child.kill("SIGKILL"))
  })

/** A port that was free a moment ago on 127.0.0.1 (bound to port 0, then let go). */
const freePort = Effect.async<number, Error>((resume) => {
  const server = net.createServer()
  server.once("error", (e) => resume(Effect.fail(e)))
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as net.AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** uid and gid of the `postgres` user, from /etc/passwd */
const postgresUser = (): { readonly uid: number; readonly gid: number } | Error => {
  const line = fs.readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("postgres:"))
  const [, , uid, gid] = line?.split(":") ?? []
  return uid === undefined || gid === undefined
    ? new Error("running as root, PostgreSQL must run as the `postgres` user, and there is none (Debian's postgresql package creates it)")
    : { uid: Number(uid), gid: Number(gid) }
}

export const startPostgres = (): Effect.Effect<Postgres, Error, Scope.Scope> =>
  Effect.gen(function* () {
    const bin = findBinaries()
    if (bin instanceof Error) return yield* Effect.fail(bin)
    const asRoot = process.getuid?.() === 0
    const owner = asRoot ? postgresUser() : undefined
    if (owner instanceof Error) return yield* Effect.fail(owner)
    // as root, every server-side command runs as `postgres` (initdb refuses root; the server would too)
    const server = (name: string, args: ReadonlyArray<string>, timeoutMs: number) =>
      asRoot ? run("runuser", ["-u", "postgres", "--", path.join(bin, name), ...args], timeoutMs) : run(path.join(bin, name), args, timeoutMs)

    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "codex-harness-pg-"))
        fs.mkdirSync(path.join(dir, "sock"))
        if (owner !== undefined) for (const d of [dir, path.join(dir, "sock")]) fs.chownSync(d, owner.uid, owner.gid)
        return dir
      }),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const data = path.join(dir, "data")
    const sock = path.join(dir, "sock")
    const log = path.join(dir, "pg.log")
    const logTail = () => {
      try {
        return fs.readFileSync(log, "utf8").trim().split("\n").slice(-5).join("\n")
      } catch {
        return "(no log)"
      }
    }

    yield* server("initdb", ["-D", data, "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync"], 60_000)

    // the port is free when picked, not necessarily when the server binds it: one more try on another port
    const start = (port: number) =>
      server("pg_ctl", [
        "-D", data, "-l", log, "-w", "-t", "30", "-o",
        `-p ${port} -k ${sock} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`,
        "start"
      ], 40_000).pipe(Effect.as(port), Effect.mapError((e) => new Error(`${e.message}\n${logTail()}`)))
    const stopNow = (timeoutMs: number) =>
      server("pg_ctl", ["-D", data, "-m", "immediate", "-w", "-t", "10", "stop"], timeoutMs).pipe(
        // pg_ctl could not stop it (or timed out): the postmaster's pid is the first line of postmaster.pid
        Effect.catchAll(() =>
          Effect.sync(() => {
            try {
              process.kill(Number(fs.readFileSync(path.join(data, "postmaster.pid"), "utf8").split("\n")[0]), "SIGKILL")
            } catch {
              // not running
            }
          })
        )
      )
    let stopped = false
    // should the test process exit without closing the scope, the server must not outlive it
    const onExit = () => {
      if (stopped) return
      try {
        const args = [path.join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "-t", "5", "stop"]
        if (asRoot) execFileSync("runuser", ["-u", "postgres", "--", ...args], { cwd: "/", timeout: 8_000, stdio: "ignore" })
        else execFileSync(args[0]!, args.slice(1), { cwd: "/", timeout: 8_000, stdio: "ignore" })
      } catch {
        // best effort
      }
      fs.rmSync(dir, { recursive: true, force: true })
    }
    const port = yield* Effect.acquireRelease(
      freePort.pipe(Effect.flatMap(start), Effect.retry({ times: 1 })),
      () => stopped ? Effect.void : Effect.sync(() => (stopped = true)).pipe(Effect.zipRight(stopNow(15_000)))
    )
    process.once("exit", onExit)
    yield* Effect.addFinalizer(() => Effect.sync(() => process.off("exit", onExit)))

    const psql = (sql: string, database = "postgres") =>
      run(path.join(bin, "psql"), ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", sock, "-p", String(port), "-U", "postgres", "-d", database, "-c", sql], 30_000)
    const user = "harness"
    const password = crypto.randomBytes(12).toString("hex")
    const urlOf = (db: string) => `postgres://${user}:${password}@127.0.0.1:${port}/${db}`
    yield* psql(`CREATE ROLE ${user} LOGIN PASSWORD '${password}'`)
    const createDatabase = (name: string) =>
      /^[a-z_][a-z0-9_]{0,62}$/.test(name)
        ? psql(`CREATE DATABASE ${name} OWNER ${user}`).pipe(Effect.as(urlOf(name)))
        : Effect.fail(new Error(`not a plain database name: ${name}`))
    const url = yield* createDatabase("harness")

    return {
      url,
      port,
      createDatabase,
      psql,
      dir,
      stop: Effect.suspend(() => stopped ? Effect.void : Effect.sync(() => (stopped = true)).pipe(Effect.zipRight(stopNow(15_000))))
    } satisfies Postgres
  })

/**
 * One throwaway server for a vitest file: started in beforeAll, stopped in afterAll. The getter throws if called
 * before beforeAll has run (e.g. at collection time).
 */
export const withPostgres = (): (() => Postgres) => {
  let scope: Scope.CloseableScope | undefined
  let pg: Postgres | undefined
  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    pg = await Effect.runPromise(startPostgres().pipe(Scope.extend(scope)))
  }, 90_000)
  afterAll(async () => {
    if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  }, 30_000)
  return () => {
    if (pg === undefined) throw new Error("withPostgres: the server is not started yet (use it inside a test or hook)")
    return pg
  }
}
