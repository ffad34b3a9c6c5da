// Which session a typed reference names: a whole id, a unique prefix of at least 4 characters, or the most recent one;
// an ambiguous prefix and no match are typed errors with one readable line.
import { FileSystem as FileSystemTag } from "@effect/platform"
import type { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import {
  AmbiguousSessionRef,
  matchSessionRef,
  mostRecentIn,
  mostRecentSession,
  resolveIn,
  resolveSessionRef,
  SessionNotFound
} from "../../src/cli/sessionRef.js"
import { fileStore } from "../../src/session/FileSessionStore.js"
import { matchLookup } from "../../src/session/SessionRef.js"
import { memoryStore, type SessionStoreService } from "../../src/session/SessionStore.js"
import { tempDir } from "../support/harness.js"

/** a store whose listing is exactly these ids, most recent first */
const storeOf = (ids: ReadonlyArray<string>): SessionStoreService => ({
  ...memoryStore(),
  list: Effect.succeed(ids.map((sessionId, i) => ({ sessionId, updatedAt: new Date(Date.UTC(2026, 0, 1) - i * 1000) })))
})

const failureOf = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.exit(effect), (exit) => (Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : exit))

const ids = ["3f2a9c1e-aaaa", "3f2a77b0-bbbb", "77b0c0de-cccc", "notes", "notes-2"]

describe("matchSessionRef", () => {
  it("a whole id, even one that starts another id; else the one id a prefix of 4 or more starts", () => {
    expect(matchSessionRef(ids, "notes")).toEqual({ _tag: "Found", sessionId: "notes" })
    expect(matchSessionRef(ids, "3f2a9")).toEqual({ _tag: "Found", sessionId: "3f2a9c1e-aaaa" })
    expect(matchSessionRef(ids, "77b0")).toEqual({ _tag: "Found", sessionId: "77b0c0de-cccc" })
    expect(matchSessionRef(ids, "note")).toEqual({ _tag: "Ambiguous", matching: ["notes", "notes-2"] })
  })

  it("a prefix under 4 characters names nothing (and says it is too short when it starts some id)", () => {
    expect(matchSessionRef(ids, "77b")).toEqual({ _tag: "None", tooShort: true })
    expect(matchSessionRef(ids, "zzzz")).toEqual({ _tag: "None", tooShort: false })
  })
})

describe("resolveIn", () => {
  it.effect("an ambiguous prefix fails with one line naming at most 5 candidates, most recent first", () =>
    Effect.gen(function* () {
      const many = Array.from({ length: 7 }, (_, i) => `abcd${i}000-${i}`)
      const error = yield* failureOf(resolveIn(storeOf(many), "abcd", "/state"))
      expect(error).toBeInstanceOf(AmbiguousSessionRef)
      const message = (error as AmbiguousSessionRef).message
      expect(message.split("\n")).toHaveLength(1)
      expect(message).toBe(
        "session abcd is ambiguous: 7 sessions start with it: abcd0000-0, abcd1000-1, abcd2000-2, abcd3000-3, abcd4000-4 " +
          "(and 2 more); type more of the id"
      )
    }))

  it.effect("no match names the reference and the state dir; a malformed one is refused before any lookup", () =>
    Effect.gen(function* () {
      const none = yield* failureOf(resolveIn(storeOf(ids), "ffff", "/state"))
      expect(none).toBeInstanceOf(SessionNotFound)
      expect((none as SessionNotFound).message).toBe("no session ffff in /state")
      const short = yield* failureOf(resolveIn(storeOf(ids), "3f", "/state"))
      expect((short as SessionNotFound).message).toBe("no session 3f in /state (a prefix needs at least 4 characters)")
      const bad = yield* failureOf(resolveIn(storeOf(ids), "../etc", "/state"))
      expect((bad as { _tag: string })._tag).toBe("InvalidSessionId")
      expect(yield* resolveIn(storeOf(ids), "3f2a7", "/state")).toBe("3f2a77b0-bbbb")
    }))

  it.effect("mostRecentIn: the first of the store's listing; none is a typed error", () =>
    Effect.gen(function* () {
      expect(yield* mostRecentIn(storeOf(ids), "/state")).toBe("3f2a9c1e-aaaa")
      const none = yield* failureOf(mostRecentIn(storeOf([]), "/state"))
      expect((none as { message: string }).message).toBe("no sessions in /state")
    }))
})

describe("against a state dir", () => {
  it.scoped("resolveSessionRef and mostRecentSession read the file store: the last written session is the most recent", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir("codex-session-ref-")
      const dir = path.join(stateDir, "sessions")
      fs.mkdirSync(dir)
      const write = (id: string, secondsAgo: number) => {
        const file = path.join(dir, `${id}.jsonl`)
        fs.writeFileSync(file, `${JSON.stringify({ _tag: "user", at: "t", text: id })}\n`)
        const when = new Date(Date.now() - secondsAgo * 1000)
        fs.utimesSync(file, when, when)
      }
      write("0a1b2c3d-old", 300)
      write("0a1b9999-new", 10)
      write("ffee0000-mid", 100)
      // not a session file: never a candidate
      fs.mkdirSync(path.join(dir, "0a1bdir.jsonl"))
      const run = <A, E>(effect: Effect.Effect<A, E, FileSystem.FileSystem>) => Effect.provide(effect, NodeFileSystem.layer)
      expect(yield* run(mostRecentSession(stateDir))).toBe("0a1b9999-new")
      expect(yield* run(resolveSessionRef(stateDir, "ffee"))).toBe("ffee0000-mid")
      const ambiguous = yield* failureOf(run(resolveSessionRef(stateDir, "0a1b")))
      expect((ambiguous as AmbiguousSessionRef).candidates).toEqual(["0a1b9999-new", "0a1b2c3d-old"])
      const empty = yield* tempDir("codex-session-ref-empty-")
      const none = yield* failureOf(run(mostRecentSession(empty)))
      expect((none as { _tag: string })._tag).toBe("NoSessions")
    }))

  it.scoped("the file store's lookup names what matching over its listing names, and a whole id costs no listing", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir("codex-session-lookup-")
      const dir = path.join(stateDir, "sessions")
      fs.mkdirSync(dir)
      for (const [i, id] of ["0a1b2c3d-old", "0a1b9999-new", "ffee0000-mid", "notes", "notes-2"].entries()) {
        const file = path.join(dir, `${id}.jsonl`)
        fs.writeFileSync(file, `${JSON.stringify({ _tag: "user", at: "t", text: id })}\n`)
        const when = new Date(Date.now() - (10 + i * 50) * 1000)
        fs.utimesSync(file, when, when)
      }
      fs.mkdirSync(path.join(dir, "0a1bdir.jsonl"))
      // the platform file system, counting the directory listings asked of it
      let listings = 0
      const counting = Layer.effect(
        FileSystemTag.FileSystem,
        Effect.map(FileSystemTag.FileSystem, (real) => ({
          ...real,
          readDirectory: (p: string, o?: FileSystem.ReadDirectoryOptions) => Effect.suspend(() => (listings++, real.readDirectory(p, o)))
        }))
      ).pipe(Layer.provide(NodeFileSystem.layer))
      const store = yield* Effect.provide(fileStore(stateDir), counting)
      const listed = (yield* store.list).map((x) => x.sessionId)
      for (const ref of ["notes", "0a1b9999-new", "ffee", "0a1b", "note", "zzzz", "0a1", "0a1bdir"]) {
        const before = listings
        const { matches: _count, ...viaLookup } = matchLookup(ref)(yield* store.lookup!(ref, 5)) as { matches?: number }
        expect(viaLookup, ref).toEqual(matchSessionRef(listed, ref))
        if (listed.includes(ref)) expect(listings, ref).toBe(before)
      }
    }))
})

