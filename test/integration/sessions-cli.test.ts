// `sessions list` as a table, sessions named by a prefix of their id, and `doctor`: the compiled bin (npm run build
// first) against the real app-server and a scripted model.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { type Fixture, fixture, leftBehind, processesMentioning, tempDir } from "../support/harness.js"

const common = (f: Fixture) => ["--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir]
const noStackTrace = (text: string) => expect(text).not.toMatch(/^\s+at /m)

describe("sessions list and session prefixes", () => {
  it.scopedLive("a table with a header and the first prompt as title; show by a unique prefix; an ambiguous prefix is exit 1", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("one"), reply.text("two"), reply.text("three")] })
      // written in this order, so the last is the most recent; the first two ids share their first 4 characters
      for (const [id, prompt] of [
        ["abcd1111-first", "summarise\nthe README"],
        ["abcd2222-second", "a second question"],
        ["ffff0000-third", "\u001b[31mred\u001b[0m text\u0007 here"]
      ] as const) {
        const ran = yield* runBin(["run", ...common(f), "--model", "m1", "--session", id, prompt])
        expect(ran.code, ran.stderr).toBe(0)
      }
      const host = new URL(f.model.url).host

      const list = yield* runBin(["sessions", "list", "--state-dir", f.stateDir])
      expect(list.code).toBe(0)
      const lines = list.stdout.trimEnd().split("\n")
      for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(80)
      expect(lines[0]).toMatch(/^ID {2,}TITLE {2,}UPDATED {2,}TURNS {2}RUNTIME$/)
      const runtime = `m1 / ${host.replace(/\./g, "\\.")}`
      expect(lines.slice(1)).toEqual([
        expect.stringMatching(new RegExp(`^ffff0000 {2}red text here +\\d\\d-\\d\\d \\d\\d:\\d\\d +1 {2}${runtime}$`)),
        expect.stringMatching(new RegExp(`^abcd2222 {2}a second question +\\d\\d-\\d\\d \\d\\d:\\d\\d +1 {2}${runtime}$`)),
        expect.stringMatching(new RegExp(`^abcd1111 {2}summarise the README +\\d\\d-\\d\\d \\d\\d:\\d\\d +1 {2}${runtime}$`))
      ])
      expect(list.stdout).not.toContain("\u001b")

      const json = yield* runBin(["sessions", "list", "--json", "--state-dir", f.stateDir])
      const rows = JSON.parse(json.stdout) as ReadonlyArray<{ sessionId: string; title: string; turns: number; threadId: string }>
      expect(rows.map((r) => [r.sessionId, r.title, r.turns])).toEqual([
        ["ffff0000-third", "red text here", 1],
        ["abcd2222-second", "a second question", 1],
        ["abcd1111-first", "summarise the README", 1]
      ])

      const show = yield* runBin(["sessions", "show", "--state-dir", f.stateDir, "abcd1"])
      expect(show.code).toBe(0)
      expect(show.stdout.split("\n")).toEqual(expect.arrayContaining(["session: abcd1111-first", "you: summarise", "codex: one"]))

      const ambiguous = yield* runBin(["sessions", "show", "--state-dir", f.stateDir, "abcd"])
      expect(ambiguous.code).toBe(1)
      expect(ambiguous.stdout).toBe("")
      expect(ambiguous.stderr).toBe(
        "codex-harness: session abcd is ambiguous: 2 sessions start with it: abcd2222-second, abcd1111-first; type more of the id\n"
      )
      const missing = yield* runBin(["sessions", "delete", "--state-dir", f.stateDir, "0000"])
      expect(missing.code).toBe(1)
      expect(missing.stderr).toBe(`codex-harness: no session 0000 in ${f.stateDir}\n`)
      const deleted = yield* runBin(["sessions", "delete", "--state-dir", f.stateDir, "ffff"])
      expect(deleted).toMatchObject({ code: 0, stdout: "deleted: ffff0000-third\n" })
      expect(fs.existsSync(path.join(f.stateDir, "sessions", "ffff0000-third.jsonl"))).toBe(false)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 120_000) // three turns in a row, each a cold start of the CLI and the app-server
})

describe("doctor", () => {
  it.scopedLive("with everything in place: a line per check, all ok, exit 0, nothing left behind", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      // a temp dir of its own: relay directories other runs on this machine left must not fail this one
      const tmp = yield* tempDir("codex-doctor-tmp-")
      const ran = yield* runBin(["doctor", "--provider-url", f.model.url, "--state-dir", f.stateDir], { env: { TMPDIR: tmp } })
      expect(ran.code, ran.stdout + ran.stderr).toBe(0)
      expect(ran.stderr).toBe("")
      const lines = ran.stdout.trimEnd().split("\n")
      expect(lines.map((l) => l.slice(0, 5))).toEqual(Array(lines.length).fill("ok   "))
      expect(lines).toEqual(expect.arrayContaining([
        expect.stringMatching(/^ok {3}codex binary \S+: codex-cli \d+\.\d+\.\d+$/),
        expect.stringMatching(new RegExp(`^ok {3}app-server initialize in \\d+\\.\\d s \\(.*\\), CODEX_HOME ${f.stateDir}/codex-home$`)),
        `ok   state dir ${f.stateDir} is writable`,
        `ok   CODEX_HOME ${f.stateDir}/codex-home is writable`,
        expect.stringMatching(/^ok {3}provider http:\/\/127\.0\.0\.1:\d+\/v1 answers: HTTP 404 for GET \/models in \d+ ms$/),
        "ok   no leftover app-servers or hook relays",
        `ok   no stale hook relay directories in ${tmp}`,
        expect.stringMatching(/^ok {3}hook relay round trip in \d+ ms /)
      ]))
      // its probes and its relay's directory are gone; so are its app-server and relay
      expect(fs.readdirSync(f.stateDir).filter((n) => n.startsWith(".codex-harness-doctor"))).toEqual([])
      expect(fs.readdirSync(tmp).filter((n) => n.startsWith("codex-hr-"))).toEqual([])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("a file where the state dir should be: a FAIL line saying so, the other checks still run, exit 1", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("codex-doctor-")
      const file = path.join(dir, "state")
      fs.writeFileSync(file, "")
      const codexHome = path.join(dir, "codex-home")
      const ran = yield* runBin(["doctor", "--state-dir", file, "--codex-home", codexHome], { env: { TMPDIR: dir } })
      expect(ran.code).toBe(1)
      const lines = ran.stdout.trimEnd().split("\n")
      expect(lines).toContain(`FAIL state dir: not a directory: ${file}`)
      expect(lines).toContain(`ok   CODEX_HOME ${codexHome} is writable`)
      expect(lines).toContain("skip provider: no --provider-url (or providerUrl in the config): Codex uses its own configuration and login")
      expect(lines.every((l) => /^(ok {3}|FAIL |skip )/.test(l)), lines.join("\n")).toBe(true)
      const failures = lines.filter((l) => l.startsWith("FAIL")).length
      expect(ran.stderr).toBe(`codex-harness: ${failures} of ${lines.length} doctor checks failed\n`)
      noStackTrace(ran.stderr)
      expect(processesMentioning(codexHome)).toEqual([])
    }))
})
