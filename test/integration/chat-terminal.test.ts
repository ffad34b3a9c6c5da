// `codex-harness chat`'s lines for what the agent did (piped and at a terminal), and typing while a turn streams at a
// terminal: the compiled bin against the real app-server and a scripted model.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect } from "effect"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { onPty } from "../support/pty.js"
import { type Fixture, fixture, leftBehind } from "../support/harness.js"

const common = (f: Fixture) => ["--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir]

/**
 * What each line of the screen shows at the end, as a terminal draws it: a carriage return or `ESC[nG` moves the
 * cursor within the line, `ESC[2K` clears the line and `ESC[0J` / `ESC[K` what follows the cursor; other sequences
 * (colours) draw nothing. Enough for what chat writes; lines left blank are dropped.
 */
const visibleLines = (screen: string) =>
  screen.split("\n").map((raw) => {
    let cells: Array<string> = []
    let col = 0
    for (let i = 0; i < raw.length; i++) {
      const ch = raw[i]!
      if (ch === "\r") {
        col = 0
        continue
      }
      if (ch === "\x1b") {
        const m = /^\x1b\[([0-9;?]*)([A-Za-z])/.exec(raw.slice(i))
        if (m === null) continue
        i += m[0].length - 1
        const n = m[1] === "" ? undefined : Number(m[1])
        if (m[2] === "G") col = Math.max(0, (n ?? 1) - 1)
        else if (m[2] === "K" && n === 2) cells = []
        else if (m[2] === "K" || m[2] === "J") cells = cells.slice(0, col)
        continue
      }
      while (cells.length < col) cells.push(" ")
      cells[col++] = ch
    }
    return cells.join("").trimEnd()
  }).filter((line) => line.trim() !== "")

describe("codex-harness chat: what the agent did", () => {
  it.scopedLive("piped: a command the agent ran gets one line on stderr, after the session line; stdout is the reply alone", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        replies: [
          reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "ls" } }),
          reply.text("listed")
        ]
      })
      const ran = yield* runBin(["chat", ...common(f)], { input: "what is here?\n" })
      expect(ran.code).toBe(0)
      expect(ran.stdout).toBe("listed\n")
      expect(ran.stderr).toMatch(/^session: [0-9a-f-]{36}\n {2}› ran .*\bls\b.* \(exit 0\)\n$/)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("piped --json: no such lines (the events carry the items)", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        replies: [
          reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "ls" } }),
          reply.text("listed")
        ]
      })
      const ran = yield* runBin(["chat", "--json", ...common(f)], { input: "what is here?\n" })
      expect(ran.code).toBe(0)
      expect(ran.stderr).not.toContain("›")
      expect(ran.stdout).not.toContain("›")
    })
  )

  it.scopedLive("at a terminal: typing while a reply streams shows a prompt line of its own, never glued to reply or spinner; the steer reaches the model", () =>
    Effect.gen(function* () {
      const typed = "steer: also mention cats"
      // the model stops mid-turn until the chat has said it steers the typed line into the running turn
      const steering = yield* Deferred.make<void>()
      const f = yield* fixture({
        replies: [
          reply.steps({ type: "message", text: "A slow reply that" }, { type: "wait", until: Deferred.await(steering) }, { type: "message", text: "goes on" }),
          reply.text("and about cats")
        ]
      })
      const pty = yield* onPty(["chat", ...common(f)])
      yield* pty.shows("you › ")
      yield* pty.type("write slowly\r")
      yield* pty.shows("A slow reply that")
      yield* pty.type(typed)
      yield* pty.shows(typed)
      yield* pty.type("\r")
      yield* pty.shows("(steering into the running turn)")
      yield* Deferred.succeed(steering, undefined)
      const requests = yield* f.model.waitForRequests(2).pipe(Effect.timeout(Duration.seconds(30)), Effect.orDie)
      expect(requests[1]!.body).toContain(typed)
      yield* pty.shows("and about cats")
      yield* pty.type("/quit\r")
      expect(yield* pty.exited).toBe(0)
      const lines = visibleLines(pty.screen())
      // the typed text sits on its own prompt line: never after reply text, a spinner frame or the progress label
      const withTyped = lines.filter((l) => l.includes("steer:"))
      expect(withTyped.length).toBeGreaterThan(0)
      for (const line of withTyped) expect(line).toMatch(/^you › (s|st|ste|stee|steer:.*)$/)
      expect(lines.some((l) => l === `you › ${typed}`)).toBe(true)
      // and reply text never shares a line with the prompt
      for (const line of lines.filter((l) => l.includes("A slow reply") || l.includes("goes on"))) expect(line).not.toContain("you ›")
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )
})
