// A throwaway PostgreSQL for bench/cluster.ts: the lines of test/support/postgres.ts it needs, without vitest (that
// module imports it) and without Effect. Debian's server binaries (/usr/lib/postgresql/*/bin) run a fresh cluster in a
// temp dir on a free loopback port, its unix socket inside that dir, TCP with a scram password for a role of its own,
// fsync off. As root, initdb and the server run as the `postgres` user from `/` (CLUSTER-NOTES (a)). Two additions for
// measuring: `pg_stat_statements` is preloaded (statements per turn, by statement), and `track_io_timing` stays off.
// Every command is bounded; `stop` is idempotent (-m fast, then SIGKILL of the postmaster) and removes the dir; a
// process exit that skips it still stops the server (a best-effort exit hook).
import { execFile, execFileSync } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

export interface Postgres {
  readonly port: number
  readonly dir: string
  /** the role that owns the databases, its password (given to runners in $PGPASSWORD, never on argv) */
  readonly user: string
  readonly password: string
  /** a fresh database owned by the role; returns postgres://USER@127.0.0.1:PORT/NAME (no password) */
  readonly createDatabase: (name: string) => Promise<string>
  /** SQL as the superuser over the unix socket in `database` (default `postgres`); psql's unaligned tuples-only output */
  readonly psql: (sql: string, database?: string) => Promise<string>
  /** the postmaster's pid (from postmaster.pid) */
  readonly postmasterPid: () => number | undefined
  readonly stop: () => Promise<void>
  /** whether pg_stat_statements could be loaded */
  readonly statements: boolean
}

const needed = ["initdb", "pg_ctl", "psql"] as const

const findBinaries = (root = "/usr/lib/postgresql"): string => {
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : []
  for (const v of versions) {
    const bin = path.join(root, v, "bin")
    if (needed.every((b) => fs.existsSync(path.join(bin, b)))) return bin
  }
  throw new Error(`PostgreSQL server binaries not found under ${root}/*/bin: install Debian's server package (apt-get install -y postgresql), as .ci/run does`)
}

const run = (file: string, args: ReadonlyArray<string>, timeoutMs: number): Promise<string> =>
  new Promise((resolve, reject) => {
    execFile(file, [...args], { cwd: "/", timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error === null) return resolve(stdout)
      const why = error.killed ? `timed out after ${timeoutMs} ms` : `exit ${error.code ?? error.signal}`
      reject(new Error(`${path.basename(file)} ${args.join(" ").slice(0, 200)}: ${why}: ${stderr.trim() || stdout.trim()}`))
    })
  })

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

const postgresUser = (): { readonly uid: number; readonly gid: number } => {
  const line = fs.readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("postgres:"))
  const [, , uid, gid] = line?.split(":") ?? []
  if (uid === undefined || gid === undefined) throw new Error("running as root, PostgreSQL must run as the `postgres` user, and there is none")
  return { uid: Number(uid), gid: Number(gid) }
}

export const startPostgres = async (): Promise<Postgres> => {
  const bin = findBinaries()
  const asRoot = process.getuid?.() === 0
  const owner = asRoot ? postgresUser() : undefined
  const server = (name: string, args: ReadonlyArray<string>, timeoutMs: number) =>
    asRoot ? run("runuser", ["-u", "postgres", "--", path.join(bin, name), ...args], timeoutMs) : run(path.join(bin, name), args, timeoutMs)

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "codex-bench-pg-"))
  fs.mkdirSync(path.join(dir, "sock"))
  if (owner !== undefined) for (const d of [dir, path.join(dir, "sock")]) fs.chownSync(d, owner.uid, owner.gid)
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
  let stopped = false
  const stopSync = () => {
    if (stopped) return
    stopped = true
    try {
      const args = [path.join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "-t", "10", "stop"]
      if (asRoot) execFileSync("runuser", ["-u", "postgres", "--", ...args], { cwd: "/", timeout: 15_000, stdio: "ignore" })
      else execFileSync(args[0]!, args.slice(1), { cwd: "/", timeout: 15_000, stdio: "ignore" })
    } catch {
      const pid = postmasterPid()
      if (pid !== undefined) {
        try {
          process.kill(pid, "SIGKILL")
        } catch {}
      }
    }
    fs.rmSync(dir, { recursive: true, force: true })
  }
  process.once("exit", stopSync)

  try {
    await server("initdb", ["-D", data, "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync"], 60_000)
    const canTrackStatements = fs.existsSync(path.join(path.dirname(bin), "lib", "pg_stat_statements.so"))
    const start = async (port: number) => {
      await server("pg_ctl", [
        "-D", data, "-l", log, "-w", "-t", "30", "-o",
        `-p ${port} -k ${sock} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off` +
        (canTrackStatements ? " -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.max=2000" : ""),
        "start"
      ], 40_000).catch((e: Error) => Promise.reject(new Error(`${e.message}\n${logTail()}`)))
      return port
    }
    // the port is free when picked, not necessarily when the server binds it: one more try on another port
    const port = await start(await freePort()).catch(async () => start(await freePort()))
    const psql = (sql: string, database = "postgres") =>
      run(path.join(bin, "psql"), ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", sock, "-p", String(port), "-U", "postgres", "-d", database, "-c", sql], 30_000)
    let statements = false
    if (canTrackStatements) {
      statements = await psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements").then(() => true, () => false)
    }
    const user = "harness"
    const password = crypto.randomBytes(12).toString("hex")
    await psql(`CREATE ROLE ${user} LOGIN PASSWORD '${password}'`)
    const createDatabase = async (name: string) => {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a plain database name: ${name}`)
      await psql(`CREATE DATABASE ${name} OWNER ${user}`)
      return `postgres://${user}@127.0.0.1:${port}/${name}`
    }
    return {
      port,
      dir,
      user,
      password,
      createDatabase,
      psql,
      postmasterPid,
      statements,
      stop: async () => {
        if (stopped) return
        stopped = true
        process.off("exit", stopSync)
        await server("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "10", "stop"], 15_000).catch(() => {
          const pid = postmasterPid()
          if (pid !== undefined) {
            try {
              process.kill(pid, "SIGKILL")
            } catch {}
          }
        })
        fs.rmSync(dir, { recursive: true, force: true })
      }
    }
  } catch (error) {
    stopSync()
    process.off("exit", stopSync)
    throw error
  }
}
