// `codex-harness hook-relay --socket S --token T --event E`: the command Codex runs for each relayed native hook (S20).
// It reads the hook payload from stdin, forwards it over the harness's relay socket and prints the decision in Codex's
// hook output format. It loads nothing but Node's own modules so it starts fast. When the relay is unreachable or
// refuses the token it fails closed: PreToolUse and PermissionRequest exit 2 with one stderr line (Codex blocks the
// call), PostToolUse and Stop exit 0 with no decision. Runs by itself when it is the entry point
// (`node dist/src/cli/hookRelay.js --socket …`), or through `main(argv)`.
import * as net from "node:net"
import { pathToFileURL } from "node:url"

export interface RelayArgs {
  readonly socket: string
  readonly token: string
  readonly event: string
}

/** Pure. undefined when a flag is missing. */
export const parseArgs = (argv: ReadonlyArray<string>): RelayArgs | undefined => {
  const values: Record<string, string> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const eq = arg.indexOf("=")
    if (arg.startsWith("--") && eq > 0) values[arg.slice(2, eq)] = arg.slice(eq + 1)
    else if (arg.startsWith("--") && i + 1 < argv.length) values[arg.slice(2)] = argv[++i]!
  }
  const { event, socket, token } = values
  return socket !== undefined && token !== undefined && event !== undefined ? { socket, token, event } : undefined
}

/** PreToolUse and PermissionRequest block when the relay cannot decide; the others carry on. Pure. */
export const failsClosed = (event: string) => event === "PreToolUse" || event === "PermissionRequest"

const readStdin = (): Promise<string> =>
  new Promise((resolve, reject) => {
    if (process.stdin.isTTY) return resolve("")
    let text = ""
    process.stdin.setEncoding("utf8")
    process.stdin.on("data", (chunk: string) => (text += chunk))
    process.stdin.on("end", () => resolve(text))
    process.stdin.on("error", reject)
  })

interface Output {
  readonly exitCode: number
  readonly stdout?: string
  readonly stderr?: string
}

const ask = (args: RelayArgs, payload: unknown): Promise<Output> =>
  new Promise((resolve, reject) => {
    const socket = net.createConnection(args.socket)
    let reply = ""
    socket.setEncoding("utf8")
    socket.on("connect", () => socket.write(JSON.stringify({ token: args.token, event: args.event, payload }) + "\n"))
    socket.on("data", (chunk: string) => (reply += chunk))
    socket.on("error", (e) => reject(e))
    socket.on("close", () => {
      const line = reply.split("\n")[0] ?? ""
      let parsed: unknown
      try {
        parsed = JSON.parse(line)
      } catch {
        return reject(new Error(line === "" ? "the relay closed without a reply" : "the relay's reply is not JSON"))
      }
      const r = parsed as { ok?: unknown; output?: Output; error?: unknown }
      if (r.ok !== true || typeof r.output !== "object" || r.output === null) {
        return reject(new Error(typeof r.error === "string" ? r.error : "the relay refused the request"))
      }
      resolve(r.output)
    })
  })

/** Runs the relay for one hook; resolves to the exit code (output already written). */
export const main = async (argv: ReadonlyArray<string>): Promise<number> => {
  const args = parseArgs(argv)
  if (args === undefined) {
    process.stderr.write("codex-harness hook-relay: usage: hook-relay --socket PATH --token TOKEN --event EVENT\n")
    return 2
  }
  const failed = (reason: string) => {
    if (!failsClosed(args.event)) return 0
    process.stderr.write(`codex-harness hook relay unreachable: ${reason}\n`)
    return 2
  }
  let payload: unknown
  try {
    const text = await readStdin()
    payload = text.trim() === "" ? null : JSON.parse(text)
  } catch (e) {
    return failed(`cannot read the hook payload: ${e instanceof Error ? e.message : String(e)}`)
  }
  let output: Output
  try {
    output = await ask(args, payload)
  } catch (e) {
    return failed(e instanceof Error ? e.message : String(e))
  }
  if (output.stdout !== undefined && output.stdout !== "") process.stdout.write(output.stdout + "\n")
  if (output.stderr !== undefined && output.stderr !== "") process.stderr.write(output.stderr + "\n")
  return output.exitCode === 2 ? 2 : 0
}

const entry = process.argv[1]
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code
  })
}
