// `codex-harness hook-relay --socket S --token-file F --event E [--timeout-ms N] [--approval-mode report]`: the command
// Codex runs for each relayed native hook (S20). It reads the hook payload from stdin, forwards it over the harness's
// relay socket with the session's token (read from F: a command line is readable by every user, a 0600 file in the
// relay's private directory is not) and a fresh nonce, and prints the decision in Codex's hook output format. It loads
// nothing but Node's own modules so it starts fast. `--approval-mode report` marks the payload it forwards
// `openclaw_approval_mode: "report"` (unless the payload says otherwise itself): Codex 0.171.0 never sets that field, so
// this is how a harness that wants report mode (S22) gets it from the real binary.
//
// Whenever it cannot get a decision it can trust (the relay unreachable or refusing, no answer within its deadline, a
// reply that is not one of the two exit codes a hook may have) it fails closed: PreToolUse and PermissionRequest exit 2
// with one stderr line (Codex blocks the call), PostToolUse and Stop exit 0 with no decision. The deadline is its own,
// below Codex's hook timeout (the harness passes it as --timeout-ms), counted from the process's start, so the relay
// answers before Codex gives up on the hook and decides without it. Runs by itself when it is the entry point
// (`node dist/src/cli/hookRelay.js --socket …`), or through `main(argv)`.
import * as crypto from "node:crypto"
import { readFile } from "node:fs/promises"
import * as net from "node:net"
import { pathToFileURL } from "node:url"

export interface RelayArgs {
  readonly socket: string
  readonly tokenFile: string
  readonly event: string
  /** the relay's deadline, from its start */
  readonly timeoutMs: number
  /** the approval mode the forwarded payload is marked with (S22) */
  readonly approvalMode?: "report"
}

/**
 * The deadline without --timeout-ms (a hand-written command): below the shortest hook timeout the harness gives Codex
 * (30 s), so the relay still answers first.
 */
export const defaultTimeoutMs = 25_000

/**
 * Pure. undefined when a required flag is missing, --timeout-ms is not a positive whole number or --approval-mode is
 * not `report`.
 */
export const parseArgs = (argv: ReadonlyArray<string>): RelayArgs | undefined => {
  const values: Record<string, string> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const eq = arg.indexOf("=")
    if (arg.startsWith("--") && eq > 0) values[arg.slice(2, eq)] = arg.slice(eq + 1)
    else if (arg.startsWith("--") && i + 1 < argv.length) values[arg.slice(2)] = argv[++i]!
  }
  const { event, socket } = values
  const tokenFile = values["token-file"]
  const timeout = values["timeout-ms"]
  const timeoutMs = timeout === undefined ? defaultTimeoutMs : /^\d{1,9}$/.test(timeout) ? Number(timeout) : 0
  const approvalMode = values["approval-mode"]
  if (socket === undefined || tokenFile === undefined || event === undefined || timeoutMs <= 0) return undefined
  if (approvalMode !== undefined && approvalMode !== "report") return undefined
  return { socket, tokenFile, event, timeoutMs, ...(approvalMode !== undefined ? { approvalMode } : {}) }
}

/** The payload as it is forwarded: marked with the approval mode when one is asked for and it names none. Pure. */
export const markPayload = (payload: unknown, approvalMode: "report" | undefined): unknown =>
  approvalMode !== undefined && typeof payload === "object" && payload !== null && !Array.isArray(payload) &&
    !("openclaw_approval_mode" in payload)
    ? { ...payload, openclaw_approval_mode: approvalMode }
    : payload

/** PreToolUse and PermissionRequest block when the relay cannot decide; the others carry on. Pure. */
export const failsClosed = (event: string) => event === "PreToolUse" || event === "PermissionRequest"

export interface Output {
  readonly exitCode: 0 | 2
  readonly stdout?: string
  readonly stderr?: string
}

/**
 * The relay's output when it is one a hook can act on: exit code 0 or 2 (the number), stdout and stderr strings when
 * present. Anything else (exit code 7 or "2", a stdout that is not a string) is undefined: a failure, never an allow.
 * Pure.
 */
export const readOutput = (u: unknown): Output | undefined => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) return undefined
  const { exitCode, stderr, stdout } = u as Record<string, unknown>
  if (exitCode !== 0 && exitCode !== 2) return undefined
  if ((stdout !== undefined && typeof stdout !== "string") || (stderr !== undefined && typeof stderr !== "string")) return undefined
  return { exitCode, ...(stdout !== undefined ? { stdout } : {}), ...(stderr !== undefined ? { stderr } : {}) }
}

/** Why the relay gave no decision, as the one line Codex shows. */
class NoDecision extends Error {}

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim()

/** Everything the relay holds open, released on the deadline so the process can end at once. */
type Release = (release: () => void) => void

const readStdin = (hold: Release): Promise<string> =>
  new Promise((resolve, reject) => {
    if (process.stdin.isTTY) return resolve("")
    let text = ""
    hold(() => process.stdin.destroy())
    process.stdin.setEncoding("utf8")
    process.stdin.on("data", (chunk: string) => (text += chunk))
    process.stdin.on("end", () => resolve(text))
    process.stdin.on("error", reject)
  })

const ask = (args: RelayArgs, token: string, payload: unknown, hold: Release): Promise<Output> =>
  new Promise((resolve, reject) => {
    const socket = net.createConnection(args.socket)
    hold(() => socket.destroy())
    const nonce = crypto.randomBytes(16).toString("hex")
    let reply = ""
    socket.setEncoding("utf8")
    socket.on("connect", () => socket.write(JSON.stringify({ token, nonce, event: args.event, payload }) + "\n"))
    socket.on("data", (chunk: string) => (reply += chunk))
    socket.on("error", (e) => reject(new NoDecision(`codex-harness hook relay unreachable: ${e.message}`)))
    socket.on("close", () => {
      const line = reply.split("\n")[0] ?? ""
      let parsed: unknown
      try {
        parsed = JSON.parse(line)
      } catch {
        const why = line === "" ? "the relay closed without a reply" : "the relay's reply is not JSON"
        return reject(new NoDecision(`codex-harness hook relay unreachable: ${why}`))
      }
      const r = (typeof parsed === "object" && parsed !== null ? parsed : {}) as { ok?: unknown; output?: unknown; error?: unknown }
      if (r.ok !== true) {
        const why = typeof r.error === "string" ? r.error : "the relay refused the request"
        return reject(new NoDecision(`codex-harness hook relay unreachable: ${why}`))
      }
      const output = readOutput(r.output)
      if (output === undefined) {
        const shown = String(JSON.stringify(r.output)).slice(0, 200)
        return reject(new NoDecision(`codex-harness hook relay: an unexpected reply, taken as no decision: ${shown}`))
      }
      resolve(output)
    })
  })

const decide = async (args: RelayArgs, hold: Release): Promise<Output> => {
  let token: string
  try {
    token = (await readFile(args.tokenFile, "utf8")).trim()
  } catch (e) {
    throw new NoDecision(`codex-harness hook relay: cannot read the token file: ${e instanceof Error ? e.message : String(e)}`)
  }
  let payload: unknown
  try {
    const text = await readStdin(hold)
    payload = text.trim() === "" ? null : JSON.parse(text)
  } catch (e) {
    throw new NoDecision(`codex-harness hook relay: cannot read the hook payload: ${e instanceof Error ? e.message : String(e)}`)
  }
  return ask(args, token, markPayload(payload, args.approvalMode), hold)
}

/** Runs the relay for one hook; resolves to the exit code (output already written). */
export const main = async (argv: ReadonlyArray<string>): Promise<number> => {
  const args = parseArgs(argv)
  if (args === undefined) {
    process.stderr.write(
      "codex-harness hook-relay: usage: hook-relay --socket PATH --token-file PATH --event EVENT [--timeout-ms N] [--approval-mode report]\n"
    )
    return 2
  }
  const held: Array<() => void> = []
  // once the answer is given, whatever is opened late is closed at once, so nothing keeps the process alive
  let answered = false
  const hold: Release = (release) => (answered ? release() : void held.push(release))
  let timer: ReturnType<typeof setTimeout> | undefined
  // counted from the process's start: Node's own start-up is part of the time Codex gives the hook
  const remaining = Math.max(0, args.timeoutMs - performance.now())
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new NoDecision(`codex-harness hook relay: no decision within ${(args.timeoutMs / 1000).toFixed(1)} s`)),
      remaining
    )
  })
  let output: Output
  try {
    output = await Promise.race([decide(args, hold), deadline])
  } catch (e) {
    answered = true
    for (const release of held) release()
    if (!failsClosed(args.event)) return 0
    process.stderr.write(oneLine(e instanceof NoDecision ? e.message : `codex-harness hook relay failed: ${String(e)}`) + "\n")
    return 2
  } finally {
    clearTimeout(timer)
  }
  if (output.stdout !== undefined && output.stdout !== "") process.stdout.write(output.stdout + "\n")
  if (output.stderr !== undefined && output.stderr !== "") process.stderr.write(output.stderr + "\n")
  return output.exitCode
}

const entry = process.argv[1]
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code
  })
}
