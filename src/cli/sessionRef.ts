// Which session a `run` or `chat` means: the store-level resolution (a whole id, a unique prefix, the most recent) is
// session/SessionRef.ts, shared with `serve`; what the flags add (`--last`, `--session`, a new id) is here.
import type { FileSystem } from "@effect/platform"
import { Effect, Option } from "effect"
import { checkSessionId } from "../session/SessionStore.js"
import { mostRecentSession, type NoSessions, resolveSessionRef, type SessionRefError } from "../session/SessionRef.js"
import { UsageError } from "./errors.js"

export * from "../session/SessionRef.js"

/**
 * The session a `run` or `chat` continues or starts: `--last`, the most recently updated one; `--session REF`, the
 * session whose id it is or begins (a unique prefix of 4 or more characters), else a new session with REF as its id;
 * neither, a new session. Giving both is a usage error.
 */
export const sessionToUse = (
  options: { readonly last: boolean; readonly session: Option.Option<string> },
  stateDir: string
): Effect.Effect<string, SessionRefError | NoSessions | UsageError, FileSystem.FileSystem> => {
  if (options.last && Option.isSome(options.session)) {
    return Effect.fail(new UsageError({ line: "--last and --session both name the session to continue: give one" }))
  }
  if (options.last) return mostRecentSession(stateDir)
  if (Option.isNone(options.session)) return checkSessionId(crypto.randomUUID())
  const ref = options.session.value
  return resolveSessionRef(stateDir, ref).pipe(Effect.catchTag("SessionNotFound", () => checkSessionId(ref)))
}
