// The Control UI end to end, as a person uses it: the real `codex-harness serve` (the compiled CLI as a child process,
// the real app-server behind it, the scripted model in this process) and its page in headless Chromium (npm's
// @sparticuz/chromium unpacked into the tests' cache, or CHROMIUM_PATH, or Debian's /usr/bin/chromium when present:
// test/support/chromium.ts), driven by playwright-core. Without a token, or with a wrong one, the page says it is unauthorized; with
// the token from the link serve prints, it lists the sessions, starts a turn whose model first runs a command that
// needs approval, shows the approval card (to a second client too), takes "Allow once", shows the command's result
// and streams the reply (a reply holding an <img onerror> is shown as text); then the transcript, the thread catalog,
// a question card (an MCP server's elicitation) answered from the page, an interrupt and a compaction. A screenshot
// per step goes to test-artifacts/control-ui/. At the end the browser closes, serve gets SIGTERM, and nothing is left.
// Then the page's part of issue 27, each on a serve of its own: a message typed during a running turn is steered into
// it (the model's next request carries it) or, in followup mode, queued for a turn of its own; a reload during a turn
// follows it to its end; session rows open with Enter and Space; the agent's intermediate messages stay in the log.
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { Page } from "playwright-core"
import { reply } from "../../src/testing/ScriptedModel.js"
import { type ChromiumLaunch, findChromium } from "../support/chromium.js"
import { seen, sendPrompt, serveWithUi, shutDown, step } from "../support/controlUi.js"
import { fixture } from "../support/harness.js"

const mcpServerScript = fileURLToPath(new URL("../support/mcp-elicit-server.mjs", import.meta.url))

const artifacts = path.resolve("test-artifacts/control-ui")

// what the model says after the command ran: in pieces, with a pause between its two messages (so the page is seen
// mid-turn), and with markup that must stay text
const hostile = "Result: <img src=x onerror=\"document.title='pwned'\"> is text."
const finalText = "All done: the command printed approved-output."
const prompt = "please run the check"

// What runs in the page is written as expressions (strings): this file is Node code, compiled without the DOM's types.
const storageKept = "({ session: Object.values(sessionStorage), local: localStorage.length })"
const markupElements = `document.querySelectorAll("img, script:not([src]), iframe, object").length`
const repliesShown = `[...document.querySelectorAll('[data-testid="agent-text"]')].map((n) =>
  ({ text: n.textContent, deltas: Number(n.dataset.deltas ?? "0"), final: n.dataset.final ?? null, intermediate: n.dataset.intermediate ?? null }))`
type Shown = ReadonlyArray<{ text: string; deltas: number; final: string | null; intermediate: string | null }>
const streamingNow = (text: string) => `document.querySelector('[data-testid="turn-status"]')?.dataset.state === "running" &&
  [...document.querySelectorAll('[data-testid="agent-text"]')].some((n) => n.textContent === ${JSON.stringify(text)})`

describe("the Control UI in headless Chromium", () => {
  // npm's Chromium is unpacked into the tests' cache the first time (9-25 s, more on a busy machine), before the test
  let browserToUse: ChromiumLaunch
  beforeAll(async () => {
    browserToUse = await findChromium()
  }, 330_000)

  it.scopedLive("unauthorized without or with a wrong token; with it: sessions, a turn with an approved command, its result and the streamed reply as text, transcript, threads, a question, interrupt, compaction; nothing left running", () =>
    Effect.gen(function* () {
      fs.rmSync(artifacts, { recursive: true, force: true })
      fs.mkdirSync(artifacts, { recursive: true })
      const shots: Array<string> = []
      const shot = (page: Page, name: string) =>
        step(() => page.screenshot({ path: path.join(artifacts, `${String(shots.length + 1).padStart(2, "0")}-${name}.png`), fullPage: true }))
          .pipe(Effect.tap(() => Effect.sync(() => shots.push(name))))

      const f = yield* fixture({
        replies: [
          reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch ran.txt; echo approved-output" } }),
          reply.steps(
            { type: "message", text: hostile, chunk: 5 },
            { type: "pause", ms: 2_500 },
            { type: "message", text: finalText, chunk: 5 }
          ),
          reply.steps({ type: "function_call", name: "ask_name", namespace: "mcp__elic", arguments: {}, callId: "call_mcp" }),
          reply.text("Nice to meet you."),
          reply.steps({ type: "hang" })
        ],
        // the compaction's request
        fallback: reply.text("the summary")
      }, { approvalPolicy: "untrusted", sandbox: "workspace-write" })
      // serve's config: an MCP server whose tool asks for a name (an elicitation: a question card); what it is told is
      // written to mcp.jsonl, under the state dir so that leftBehind also finds the MCP server by its environment
      const mcpLog = path.join(f.stateDir, "mcp.jsonl")
      fs.writeFileSync(path.join(f.stateDir, "config.json"), JSON.stringify({
        mcpServers: { elic: { command: process.execPath, args: [mcpServerScript], env: { MCP_ELICIT_LOG: mcpLog }, defaultToolsApprovalMode: "approve" } }
      }))

      // the real serve; the scope stops it (SIGTERM, bounded) should the test fail before it does
      const served = yield* serveWithUi(f, ["--approval-policy", "untrusted", "--sandbox", "workspace-write"], browserToUse)
      const { open, token, ui } = served

      // 1. no token: unauthorized, and the token form
      const bare = yield* open(ui)
      yield* seen(bare.page, `[data-testid="auth-state"][data-state="unauthorized"]`)
      yield* seen(bare.page, `[data-testid="token-panel"]`)
      expect(yield* step(() => bare.page.textContent(`[data-testid="token-problem"]`))).toMatch(/no token/i)
      expect(yield* step(() => bare.page.isHidden(`[data-testid="app"]`))).toBe(true)
      yield* shot(bare.page, "no-token-unauthorized")
      yield* bare.close()

      // 2. a wrong token in the fragment: unauthorized, the fragment gone from the address bar, nothing kept
      const wrong = yield* open(`${ui}#token=${"0".repeat(64)}`)
      yield* seen(wrong.page, `[data-testid="auth-state"][data-state="unauthorized"]`)
      expect(yield* step(() => wrong.page.textContent(`[data-testid="token-problem"]`))).toContain("refused")
      expect(wrong.page.url()).toBe(ui)
      expect(yield* step(() => wrong.page.evaluate(storageKept))).toEqual({ session: [], local: 0 })
      yield* shot(wrong.page, "wrong-token-unauthorized")
      // the token field: the right token connects
      yield* step(() => wrong.page.fill(`[data-testid="token-input"]`, token))
      yield* step(() => wrong.page.click(`[data-testid="token-submit"]`))
      yield* seen(wrong.page, `[data-testid="auth-state"][data-state="connected"]`)
      expect(wrong.problems).toEqual([])
      yield* wrong.close()

      // 3. the link serve prints: connected; the token leaves the address bar and lives in sessionStorage only
      const { page, problems } = yield* open(`${ui}#token=${token}`)
      yield* seen(page, `[data-testid="auth-state"][data-state="connected"]`)
      expect(page.url()).toBe(ui)
      expect(yield* step(() => page.evaluate(storageKept))).toEqual({
        session: [token],
        local: 0
      })
      yield* seen(page, `[data-testid="sessions-empty"]`)
      expect(yield* step(() => page.textContent(`[data-testid="serve-info"]`))).toContain(f.stateDir)
      yield* shot(page, "connected-no-sessions")

      // 4. a turn: the model asks to run a command; the approval card shows what and where, and nothing ran yet
      yield* sendPrompt(page, prompt)
      const card = `[data-testid="approval-card"]`
      yield* seen(page, card)
      expect(yield* step(() => page.textContent(`${card} [data-testid="approval-subject"]`))).toContain("touch ran.txt; echo approved-output")
      expect(yield* step(() => page.textContent(`${card} [data-testid="approval-detail"]`))).toContain(f.workDir)
      expect(yield* step(() => page.getAttribute(`[data-testid="turn-status"]`, "data-state"))).toBe("running")
      expect(fs.existsSync(path.join(f.workDir, "ran.txt"))).toBe(false)
      yield* shot(page, "approval-card")
      // another client that connects now sees the waiting approval too (Pending, Watch), and sees it close
      const other = yield* open(`${ui}#token=${token}`)
      yield* seen(other.page, `${card}[data-id="${yield* step(() => page.getAttribute(card, "data-id"))}"]`)

      // 5. Allow once: the card closes, the command runs, its line shows exit 0 and its output
      yield* step(() => page.click(`${card} [data-testid="approve-once"]`))
      yield* seen(page, card, "detached")
      yield* seen(other.page, card, "detached")
      expect(other.problems).toEqual([])
      yield* other.close()
      const command = `[data-testid="tool-line"][data-kind="command"][data-status="completed"]`
      yield* seen(page, command)
      expect(yield* step(() => page.getAttribute(command, "data-exit-code"))).toBe("0")
      expect(yield* step(() => page.textContent(`${command} [data-testid="tool-output"]`))).toContain("approved-output")
      expect(fs.existsSync(path.join(f.workDir, "ran.txt"))).toBe(true)
      yield* seen(page, `[data-testid="decision"]`)
      expect(yield* step(() => page.textContent(`[data-testid="decision"]`))).toContain("allow once")
      yield* shot(page, "command-result")

      // 6. the reply streams: the first message is on the page while the turn still runs (the model pauses before the
      // second); it came in pieces (item.delta), and its markup is text
      yield* step(() => page.waitForFunction(streamingNow(hostile), undefined, { timeout: 30_000 }))
      yield* shot(page, "reply-streaming")
      yield* seen(page, `[data-testid="turn-status"][data-state="completed"]`)
      const replies = (yield* step(() => page.evaluate(repliesShown))) as Shown
      // the first message stays, marked as one the agent said on the way to its final reply
      expect(replies).toEqual([
        { text: hostile, deltas: expect.any(Number), final: null, intermediate: "true" },
        { text: finalText, deltas: expect.any(Number), final: "true", intermediate: null }
      ])
      expect(replies.every((r) => r.deltas > 1), JSON.stringify(replies)).toBe(true)
      // the model's <img onerror> made no element and ran nothing
      expect(yield* step(() => page.evaluate(markupElements))).toBe(0)
      expect(yield* step(() => page.title())).not.toBe("pwned")
      yield* shot(page, "turn-completed")

      // 7. the sessions list has the new session (titled by its prompt, selected); its transcript, from the session file
      const row = `[data-testid="session-row"]`
      yield* seen(page, `${row}.selected`)
      expect(yield* step(() => page.locator(row).count())).toBe(1)
      expect(yield* step(() => page.textContent(row))).toContain(prompt)
      yield* step(() => page.click(`[data-testid="new-session"]`))
      expect(yield* step(() => page.textContent(`[data-testid="selected-session"]`))).toBe("new session")
      yield* step(() => page.click(row))
      yield* seen(page, `[data-testid="transcript-entry"][data-tag="assistant"]`)
      expect(yield* step(() => page.textContent(`[data-testid="transcript-entry"][data-tag="user"]`))).toContain(prompt)
      expect(yield* step(() => page.textContent(`[data-testid="transcript"]`))).toContain(finalText)
      yield* shot(page, "transcript")

      // 8. the thread catalog (of the supervision home given to serve: empty, and said so)
      yield* step(() => page.click(`[data-testid="tab-threads"]`))
      yield* seen(page, `[data-testid="threads-status"][data-result="ok"]`)
      yield* seen(page, `[data-testid="threads-empty"]`)
      yield* shot(page, "threads")
      yield* step(() => page.click(`[data-testid="tab-sessions"]`))
      // the command's output reached the model
      expect((yield* f.model.requests)[1]!.body).toContain("approved-output")

      // 9. a question: the MCP tool asks for a name; the card's field and Submit; the answer reaches the MCP server
      yield* sendPrompt(page, "ask my name")
      const question = `[data-testid="question-card"]`
      yield* seen(page, question)
      expect(yield* step(() => page.textContent(question))).toContain("What is your name?")
      yield* step(() => page.fill(`${question} [data-testid="question-input"][data-question-id="name"]`, "Ada"))
      yield* shot(page, "question-card")
      yield* step(() => page.click(`${question} [data-testid="question-submit"]`))
      yield* seen(page, question, "detached")
      yield* seen(page, `[data-testid="turn-status"][data-state="completed"]`)
      expect(yield* step(() => page.textContent(`[data-testid="agent-text"][data-final="true"]`))).toBe("Nice to meet you.")
      expect(fs.readFileSync(mcpLog, "utf8").trim().split("\n").map((line) => JSON.parse(line))).toEqual([
        { tool: "ask_name", answer: { action: "accept", content: { name: "Ada" } } }
      ])

      // 10. Interrupt: a turn whose model never answers, stopped from the page once the model has its request
      yield* sendPrompt(page, "take your time")
      yield* f.model.waitForRequests(5).pipe(Effect.timeout("120 seconds"))
      yield* step(() => page.click(`[data-testid="interrupt"]`))
      yield* seen(page, `[data-testid="turn-status"][data-state="interrupted"]`)
      yield* shot(page, "interrupted")

      // 11. Compact: Codex compacts the session's thread (its request gets the model's fallback reply)
      yield* step(() => page.click(`[data-testid="compact"]`))
      const compacted = `[data-testid="action-status"]:has-text("compacted thread"), [data-testid="action-status"][data-result="error"]`
      yield* seen(page, compacted)
      expect(yield* step(() => page.textContent(`[data-testid="action-status"]`))).toMatch(/^compacted thread \S+ in [\d.]+ s$/)
      yield* shot(page, "compacted")
      expect(problems).toEqual([])

      // the end: the browser closes, serve stops on SIGTERM and takes its app-servers with it
      yield* shutDown(f, served)
      expect(shots).toHaveLength(12)
      for (const name of fs.readdirSync(artifacts)) expect(fs.statSync(path.join(artifacts, name)).size).toBeGreaterThan(1000)
    }), 240_000)

  // Issue 27: the page owns no turn. A message typed while a turn runs is sent like any other and serve steers it into
  // that turn (the model's next request carries it); a reload during a turn follows it again (Watch) instead of
  // stopping it; session rows open from the keyboard; the agent's messages before its final reply stay in the log.
  it.scopedLive("a message sent during a running turn is steered into it; a reload follows the running turn to its end; rows open with Enter and Space; intermediate messages shown", () =>
    Effect.gen(function* () {
      const shotsDir = path.resolve("test-artifacts/control-ui-live")
      fs.rmSync(shotsDir, { recursive: true, force: true })
      fs.mkdirSync(shotsDir, { recursive: true })
      const shot = (page: Page, name: string) => step(() => page.screenshot({ path: path.join(shotsDir, `${name}.png`), fullPage: true }))

      const first = "write a long essay"
      const second = "actually, keep it short"
      const third = "touch the file"
      const onTheWay = "Thinking about the essay first."
      const steered = "Short it is."
      const beforeCommand = "Checking the workspace before I touch anything."
      const afterReload = "Touched reloaded.txt."
      const f = yield* fixture({
        replies: [
          // a message, then a long pause: the steered message lands in it (Codex drops this stream and asks again)
          reply.steps({ type: "message", text: onTheWay, chunk: 6 }, { type: "pause", ms: 60_000 }, { type: "message", text: "never sent" }),
          reply.text(steered),
          // a command that waits for approval: the turn is certainly still running while the page reloads
          reply.steps(
            { type: "message", text: beforeCommand },
            { type: "function_call", name: "exec_command", arguments: { cmd: "touch reloaded.txt" } }
          ),
          reply.text(afterReload)
        ]
      }, { approvalPolicy: "untrusted", sandbox: "workspace-write" })
      const served = yield* serveWithUi(f, ["--approval-policy", "untrusted", "--sandbox", "workspace-write"], browserToUse)
      const { page, problems } = yield* served.open(`${served.ui}#token=${served.token}`)
      yield* seen(page, `[data-testid="auth-state"][data-state="connected"]`)
      const status = (state: string) => `[data-testid="turn-status"][data-state="${state}"]`
      const reply$ = (text: string) => `[data-testid="agent-text"]:text-is(${JSON.stringify(text)})`

      // 1. a turn whose model says something, then pauses; its first message is on the page while it runs
      yield* sendPrompt(page, first)
      yield* seen(page, `[data-testid="user-prompt"][data-disposition="start"]`)
      yield* seen(page, `${reply$(onTheWay)}[data-streaming="false"]`)
      expect(yield* step(() => page.getAttribute(`[data-testid="turn-status"]`, "data-state"))).toBe("running")
      // 2. Send stays enabled: a second message goes to serve, which steers it into the running turn
      expect(yield* step(() => page.isEnabled(`[data-testid="send"]`))).toBe(true)
      yield* sendPrompt(page, second)
      const steeredLine = `[data-testid="user-prompt"][data-disposition="steer"]`
      yield* seen(page, steeredLine)
      expect(yield* step(() => page.textContent(steeredLine))).toContain("steered into the running turn")
      yield* shot(page, "01-steered")
      // its effect reaches the model: the turn's next request carries it (the first one did not)
      const requests = yield* f.model.waitForRequests(2).pipe(Effect.timeout("120 seconds"))
      expect(requests[0]!.body).not.toContain(second)
      expect(requests[1]!.body).toContain(first)
      expect(requests[1]!.body).toContain(second)
      // one turn, drawn once: the intermediate message, then the reply to the steered message as the final one
      yield* seen(page, status("completed"))
      const replies = (yield* step(() => page.evaluate(repliesShown))) as Shown
      expect(replies.map(({ final, intermediate, text }) => ({ text, final, intermediate }))).toEqual([
        { text: onTheWay, final: null, intermediate: "true" },
        { text: steered, final: "true", intermediate: null }
      ])
      yield* shot(page, "02-steered-turn-completed")

      // 3. the session's row opens with Enter, and with Space (focusable, announced as a button)
      const row = `[data-testid="session-row"]`
      yield* seen(page, row)
      const sessionId = (yield* step(() => page.getAttribute(row, "data-session-id")))!
      expect(yield* step(() => page.getAttribute(row, "role"))).toBe("button")
      expect(yield* step(() => page.getAttribute(row, "tabindex"))).toBe("0")
      for (const key of ["Enter", "Space"]) {
        yield* step(() => page.click(`[data-testid="new-session"]`))
        expect(yield* step(() => page.textContent(`[data-testid="selected-session"]`))).toBe("new session")
        yield* step(() => page.focus(row))
        yield* step(() => page.keyboard.press(key))
        yield* seen(page, `[data-testid="selected-session"]:text-is("${sessionId}")`)
        yield* seen(page, `[data-testid="transcript"][data-session="${sessionId}"]`)
        expect(yield* step(() => page.getAttribute(row, "aria-current"))).toBe("true")
      }

      // 4. a turn that waits for an approval; the page reloads meanwhile: the turn goes on, and the page follows it
      yield* sendPrompt(page, third)
      const card = `[data-testid="approval-card"]`
      yield* seen(page, card)
      yield* seen(page, reply$(beforeCommand))
      expect(page.url()).toBe(`${served.ui}#session=${sessionId}`)
      yield* step(() => page.reload())
      yield* seen(page, `[data-testid="auth-state"][data-state="connected"]`)
      // the same session, its running turn followed (Health listed it), its approval still waiting
      yield* seen(page, `[data-testid="following"]`)
      expect(yield* step(() => page.textContent(`[data-testid="selected-session"]`))).toBe(sessionId)
      expect(yield* step(() => page.getAttribute(`[data-testid="turn-status"]`, "data-state"))).toBe("running")
      yield* seen(page, card)
      expect(yield* step(() => page.textContent(`${card} [data-testid="approval-subject"]`))).toContain("touch reloaded.txt")
      expect(fs.existsSync(path.join(f.workDir, "reloaded.txt"))).toBe(false)
      yield* shot(page, "03-reloaded-following")
      // approved from the reloaded page: the command runs, and the page shows the turn's end
      yield* step(() => page.click(`${card} [data-testid="approve-once"]`))
      yield* seen(page, status("completed"))
      expect(yield* step(() => page.textContent(`[data-testid="agent-text"][data-final="true"]`))).toBe(afterReload)
      expect(fs.existsSync(path.join(f.workDir, "reloaded.txt"))).toBe(true)
      // the model saw every request of the turn (nothing interrupted it): the command's approval, then its result
      expect((yield* f.model.requests)).toHaveLength(4)
      yield* shot(page, "04-reloaded-turn-completed")
      expect(problems).toEqual([])

      yield* shutDown(f, served)
    }), 240_000)

  // The same page with serve's queue in followup mode: a message typed while a turn runs waits for it and is a turn of
  // its own after it; the page says so, draws the first turn to its end, then the second.
  it.scopedLive("in followup mode a message sent during a running turn is queued: the page draws that turn's end, then the queued turn", () =>
    Effect.gen(function* () {
      const first = "touch the queue file"
      const second = "then say what you did"
      const f = yield* fixture({
        replies: [
          // waits for approval: the turn certainly runs when the second message is sent
          reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch queued.txt" } }),
          reply.text("Touched queued.txt."),
          reply.text("I touched a file, as asked.")
        ]
      }, { approvalPolicy: "untrusted", sandbox: "workspace-write" })
      fs.writeFileSync(path.join(f.stateDir, "config.json"), JSON.stringify({ messages: { queue: { mode: "followup" } } }))
      const served = yield* serveWithUi(f, ["--approval-policy", "untrusted", "--sandbox", "workspace-write"], browserToUse)
      const { page, problems } = yield* served.open(`${served.ui}#token=${served.token}`)
      yield* seen(page, `[data-testid="auth-state"][data-state="connected"]`)

      yield* sendPrompt(page, first)
      const card = `[data-testid="approval-card"]`
      yield* seen(page, card)
      yield* sendPrompt(page, second)
      const queuedLine = `[data-testid="user-prompt"][data-disposition="queue"]`
      yield* seen(page, queuedLine)
      expect(yield* step(() => page.textContent(queuedLine))).toContain("queued")
      expect(yield* step(() => page.getAttribute(queuedLine, "data-mode"))).toBe("followup")
      yield* step(() => page.click(`${card} [data-testid="approve-once"]`))
      // the queued message's turn: its reply is the last final one, after the first turn's
      const last = `[data-testid="agent-text"][data-final="true"]:text-is("I touched a file, as asked.")`
      yield* seen(page, last)
      yield* seen(page, `[data-testid="turn-status"][data-state="completed"]`)
      const replies = (yield* step(() => page.evaluate(repliesShown))) as Shown
      expect(replies.map(({ final, text }) => ({ text, final }))).toEqual([
        { text: "Touched queued.txt.", final: "true" },
        { text: "I touched a file, as asked.", final: "true" }
      ])
      // each turn drawn once: one command line, two outcomes
      expect(yield* step(() => page.locator(`[data-testid="tool-line"]`).count())).toBe(1)
      // the second message reached the model in a turn of its own, after the first turn's requests
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(3)
      expect(requests[1]!.body).not.toContain(second)
      expect(requests[2]!.body).toContain(second)
      expect(requests[2]!.body).toContain("Touched queued.txt.")
      expect(problems).toEqual([])
      yield* shutDown(f, served)
    }), 240_000)
})
