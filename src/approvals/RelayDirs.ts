// The hook relay's private directories in the temp dir, and which of them a harness that is gone left behind. A relay
// directory is `codex-hr-<pid>-XXXXXX` (HookRelayServer.ts), so its owner is known by name; harnesses from before that
// format made `codex-hr-XXXXXX` (mkdtemp's six characters, no pid), holding only their socket `relay.sock`, and those
// are told by the socket instead: nobody listening on it means its process is gone.
//
// One directory is stale only when all of these hold: it is this user's, a real directory (never a link), writable by
// nobody else (group and others have no write bit: what others may write into, the harness does not remove), and its
// owner is gone (a pid that is not alive; or, in the old format, a socket that refuses connections). A pid that is alive
// is left alone even when it was reused, and anything that cannot be read or decided is left alone too.
import { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { Duration, Effect, Option } from "effect"
import * as net from "node:net"
import * as path from "node:path"
import { isNotFound } from "../platform/fileErrors.js"
import { isAlive } from "../platform/processAlive.js"

/** the directory name's prefix; the owner's pid follows it */
export const dirPrefix = "codex-hr-"
/** the socket's name inside a relay directory (both formats) */
export const socketName = "relay.sock"
const currentName = /^codex-hr-(\d+)-[^/]+$/
/** before the pid was in the name: mkdtemp's six random letters and digits after the prefix */
const oldName = /^codex-hr-[A-Za-z0-9]{6}$/

/**
 * An old-format directory with no socket in it is either one whose socket was removed, or one an old harness has just
 * made and is about to bind: it counts as gone only once it is older than this.
 */
export const socketlessGrace = Duration.minutes(1)
/** how long a connection to an old-format socket may take before its owner counts as alive (and the directory stays) */
const connectBound = Duration.seconds(1)

/** The owner pid a current-format directory name carries, or undefined for any other name. */
export const ownerOf = (name: string): number | undefined => {
  const pid = Number(currentName.exec(name)?.[1] ?? Number.NaN)
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
}

/** Whether `name` is a relay directory from before the owner's pid was in the name. */
export const isOldFormat = (name: string): boolean => oldName.test(name)

type SocketAnswer = "listening" | "refused" | "missing" | "unknown"

/** Connects to a Unix socket and lets go at once: who answers it (a refusal means no process listens on it). */
const knock = (socket: string): Effect.Effect<SocketAnswer> =>
  Effect.async<SocketAnswer>((resume) => {
    const client = net.connect(socket)
    client.once("connect", () => {
      client.destroy()
      resume(Effect.succeed("listening"))
    })
    client.once("error", (error: NodeJS.ErrnoException) =>
      resume(Effect.succeed(error.code === "ECONNREFUSED" ? "refused" : error.code === "ENOENT" ? "missing" : "unknown")))
    return Effect.sync(() => client.destroy())
  }).pipe(Effect.timeoutTo({ duration: connectBound, onTimeout: () => "unknown" as const, onSuccess: (answer) => answer }))

/** The directories in `parent` that harnesses which are gone left, by the rules above. Fails only when `parent` cannot be read. */
export const staleDirs = (parent: string): Effect.Effect<ReadonlyArray<string>, PlatformError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const me = typeof process.getuid === "function" ? process.getuid() : undefined
    const isLink = (file: string) => fs.readLink(file).pipe(Effect.as(true), Effect.orElseSucceed(() => false))

    /** this user's real directory that nobody else may write, with its stat */
    const ours = (dir: string) =>
      Effect.gen(function* () {
        // a link is never followed: readLink succeeds only on one
        if (me === undefined || (yield* isLink(dir))) return Option.none()
        const info = yield* fs.stat(dir).pipe(Effect.option)
        if (Option.isNone(info) || info.value.type !== "Directory") return Option.none()
        if (Option.getOrUndefined(info.value.uid) !== me || (info.value.mode & 0o022) !== 0) return Option.none()
        return info
      })

    const oldOwnerGone = (dir: string, info: FileSystem.File.Info) =>
      Effect.gen(function* () {
        const socket = path.join(dir, socketName)
        if (yield* isLink(socket)) return false
        const kind = yield* fs.stat(socket).pipe(
          Effect.map((s): string => s.type),
          Effect.catchAll((e) => Effect.succeed(isNotFound(e) ? "missing" : "unreadable"))
        )
        if (kind === "missing") {
          const made = Option.getOrUndefined(info.mtime)?.getTime()
          return made !== undefined && Date.now() - made > Duration.toMillis(socketlessGrace)
        }
        if (kind !== "Socket") return false
        return (yield* knock(socket)) === "refused"
      })

    const names = yield* fs.readDirectory(parent)
    const stale: Array<string> = []
    for (const name of names) {
      const pid = ownerOf(name)
      const old = pid === undefined && isOldFormat(name)
      if (pid === undefined && !old) continue
      if (pid !== undefined && (pid === process.pid || isAlive(pid))) continue
      const dir = path.join(parent, name)
      const info = yield* ours(dir)
      if (Option.isNone(info)) continue
      if (old && !(yield* oldOwnerGone(dir, info.value))) continue
      stale.push(dir)
    }
    return stale
  })

/**
 * Removes the stale relay directories in `parent` (see `staleDirs`); returns them. Best effort: a parent that cannot
 * be read, or an entry that cannot be removed, is skipped.
 */
export const removeStaleDirs = (parent: string): Effect.Effect<ReadonlyArray<string>, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const stale = yield* staleDirs(parent).pipe(Effect.orElseSucceed((): ReadonlyArray<string> => []))
    const removed: Array<string> = []
    for (const dir of stale) {
      if (yield* fs.remove(dir, { recursive: true }).pipe(Effect.as(true), Effect.orElseSucceed(() => false))) removed.push(dir)
    }
    return removed
  })
