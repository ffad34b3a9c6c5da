// Which session a person means when they type one: the whole id, or enough of its start to pick it out (the way `git`
// takes an abbreviated commit), or the most recent one. Session ids are UUIDs unless given, and nobody types 36
// characters; `sessions list` prints the shortest prefix that is unique there (at least 8 characters).
//
// Resolved against the SessionStore's own listing, so it sees exactly what `sessions list` does (files that are not
// session files are skipped there), or, when the store can look ids up (PostgreSQL: an index lookup), against that:
// listing every session on every turn is what a cluster with many sessions cannot afford. A reference is checked like
// any session id first: it becomes a file name.
import type { FileSystem } from "@effect/platform"
import { Effect, Schema } from "effect"
import { fileStore } from "./FileSessionStore.js"
import {
  checkSessionId,
  type InvalidSessionId,
  type SessionStoreError,
  type SessionStoreService
} from "./SessionStore.js"

/** a prefix shorter than this matches nothing but a whole id: two or three characters pick out nothing for long */
export const minPrefixLength = 4
/** how many candidates an ambiguous prefix names (most recent first) */
export const maxCandidatesShown = 5

export class SessionNotFound extends Schema.TaggedError<SessionNotFound>()("SessionNotFound", {
  ref: Schema.String,
  stateDir: Schema.String,
  /** the reference is the start of some ids but shorter than minPrefixLength */
  tooShort: Schema.optionalWith(Schema.Boolean, { default: () => false })
}) {
  override get message() {
    const hint = this.tooShort ? ` (a prefix needs at least ${minPrefixLength} characters)` : ""
    return `no session ${this.ref} in ${this.stateDir}${hint}`
  }
}

export class AmbiguousSessionRef extends Schema.TaggedError<AmbiguousSessionRef>()("AmbiguousSessionRef", {
  ref: Schema.String,
  /** at most maxCandidatesShown of the matching ids, most recent first */
  candidates: Schema.Array(Schema.String),
  /** how many ids start with the reference */
  matches: Schema.Number
}) {
  override get message() {
    const more = this.matches > this.candidates.length ? ` (and ${this.matches - this.candidates.length} more)` : ""
    return `session ${this.ref} is ambiguous: ${this.matches} sessions start with it: ${this.candidates.join(", ")}${more}; type more of the id`
  }
}

export class NoSessions extends Schema.TaggedError<NoSessions>()("NoSessions", { stateDir: Schema.String }) {
  override get message() {
    return `no sessions in ${this.stateDir}`
  }
}

export type SessionRefError = InvalidSessionId | SessionNotFound | AmbiguousSessionRef | SessionStoreError

export type RefMatch =
  | { readonly _tag: "Found"; readonly sessionId: string }
  | { readonly _tag: "None"; readonly tooShort: boolean }
  | { readonly _tag: "Ambiguous"; readonly matching: ReadonlyArray<string>; readonly matches?: number | undefined }

/** matchSessionRef's answer from a store's lookup (the ids `ref` is the start of, some of them, and how many). Pure. */
export const matchLookup = (ref: string) => (found: { readonly ids: ReadonlyArray<string>; readonly matches: number }): RefMatch => {
  if (found.ids.includes(ref)) return { _tag: "Found", sessionId: ref }
  if (found.matches === 0) return { _tag: "None", tooShort: false }
  if (ref.length < minPrefixLength) return { _tag: "None", tooShort: true }
  if (found.matches === 1 && found.ids.length === 1) return { _tag: "Found", sessionId: found.ids[0]! }
  return { _tag: "Ambiguous", matching: found.ids, matches: found.matches }
}

/**
 * What `ref` picks out of `ids` (most recent first): the id equal to it, else the one id it is a prefix of (when it is
 * at least minPrefixLength long). A whole id wins over the longer ids it is a prefix of. Pure.
 */
export const matchSessionRef = (ids: ReadonlyArray<string>, ref: string): RefMatch => {
  if (ids.includes(ref)) return { _tag: "Found", sessionId: ref }
  const matching = ids.filter((id) => id.startsWith(ref))
  if (matching.length === 0) return { _tag: "None", tooShort: false }
  if (ref.length < minPrefixLength) return { _tag: "None", tooShort: true }
  if (matching.length === 1) return { _tag: "Found", sessionId: matching[0]! }
  return { _tag: "Ambiguous", matching }
}

/**
 * The id `ref` names among the sessions of `store` (see matchSessionRef). `where` names the store in errors (the state
 * dir). For a caller that already has a SessionStore, e.g. inside the harness's layers.
 */
export const resolveIn = (
  store: SessionStoreService,
  ref: string,
  where: string
): Effect.Effect<string, SessionRefError> =>
  Effect.gen(function* () {
    yield* checkSessionId(ref)
    const match = store.lookup !== undefined ? yield* Effect.map(store.lookup(ref, maxCandidatesShown + 1), matchLookup(ref)) : matchSessionRef(
      (yield* store.list).map((s) => s.sessionId),
      ref
    )
    switch (match._tag) {
      case "Found":
        return match.sessionId
      case "None":
        return yield* new SessionNotFound({ ref, stateDir: where, tooShort: match.tooShort })
      case "Ambiguous":
        return yield* new AmbiguousSessionRef({
          ref,
          candidates: match.matching.slice(0, maxCandidatesShown),
          matches: match.matches ?? match.matching.length
        })
    }
  })

/**
 * The id of the session a user-typed `ref` names under `stateDir`: a whole id, or a unique prefix of at least
 * minPrefixLength characters. Fails with SessionNotFound (nothing matches: a caller that creates sessions on first use
 * can take that as "a new id"), AmbiguousSessionRef (its message is one line naming up to five candidates),
 * InvalidSessionId (not the shape of an id) or SessionStoreError (the sessions directory cannot be read).
 */
export const resolveSessionRef = (stateDir: string, ref: string): Effect.Effect<string, SessionRefError, FileSystem.FileSystem> =>
  Effect.scoped(Effect.flatMap(fileStore(stateDir), (store) => resolveIn(store, ref, stateDir)))

/** The most recently updated session of `store`; `where` names it in the error when there is none. */
export const mostRecentIn = (store: SessionStoreService, where: string): Effect.Effect<string, NoSessions | SessionStoreError> =>
  Effect.flatMap(store.list, (sessions) =>
    sessions.length > 0 ? Effect.succeed(sessions[0]!.sessionId) : Effect.fail(new NoSessions({ stateDir: where })))

/**
 * The id of the most recently updated session under `stateDir` (its file written last: a turn, a binding, a model
 * choice), for `run --last`. Fails with NoSessions when there is none.
 */
export const mostRecentSession = (stateDir: string): Effect.Effect<string, NoSessions | SessionStoreError, FileSystem.FileSystem> =>
  Effect.scoped(Effect.flatMap(fileStore(stateDir), (store) => mostRecentIn(store, stateDir)))

