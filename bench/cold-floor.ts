// The raw floor of a cold `run`: the least a Node program must do for one turn on the same app-server binary. It
// spawns the binary, sends initialize / initialized / thread/start / turn/start, reads stdout lines until that turn's
// `turn/completed`, prints the reply, ends stdin and exits when the app-server has. Node's own modules only (no
// framework, no schema decoding), so its time is Node's start, the binary's start and the turn.
//
// Started by bench/startup.ts, which passes what to spawn as one JSON argument:
//   node dist/bench/cold-floor.js '{"command":…,"args":[…],"env":{…},"cwd":…,"model":…}'
import { spawn } from "node:child_process"

interface Spec {
  readonly command: string
  readonly args: ReadonlyArray<string>
  /** added to this process's environment (CODEX_HOME, the provider key) */
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
  readonly model: string
}

interface Message {
  readonly id?: number
  readonly method?: string
  readonly result?: { readonly thread?: { readonly id: string }; readonly turn?: { readonly id: string } }
  readonly error?: unknown
  readonly params?: { readonly turn?: { readonly id: string; readonly status: string }; readonly delta?: string }
}

const spec = JSON.parse(process.argv[2] ?? "{}") as Spec
const child = spawn(spec.command, [...spec.args], { stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, ...spec.env }, cwd: spec.cwd })
const waiting = new Map<number, (message: Message) => void>()
let nextId = 0
let reply = ""
/** turn id -> status: a turn/completed may in principle come before the turn/start response names the turn */
const completedTurns = new Map<string, string>()
let onCompleted: (() => void) | undefined

const send = (message: object) => child.stdin.write(JSON.stringify(message) + "\n")
const request = (method: string, params: object) =>
  new Promise<Message>((resolve) => {
    const id = nextId++
    waiting.set(id, resolve)
    send({ id, method, params })
  })

let buffer = ""
child.stdout.setEncoding("utf8")
child.stdout.on("data", (chunk: string) => {
  buffer += chunk
  let nl: number
  while ((nl = buffer.indexOf("\n")) >= 0) {
    const message = JSON.parse(buffer.slice(0, nl)) as Message
    buffer = buffer.slice(nl + 1)
    if (message.method === undefined && message.id !== undefined) waiting.get(message.id)?.(message)
    else if (message.method === "item/agentMessage/delta") reply += message.params?.delta ?? ""
    else if (message.method === "turn/completed" && message.params?.turn !== undefined) {
      completedTurns.set(message.params.turn.id, message.params.turn.status)
      onCompleted?.()
    }
  }
})
const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))

await request("initialize", { clientInfo: { name: "cold-floor", title: "cold-floor", version: "0.0.0" }, capabilities: { experimentalApi: true } })
send({ method: "initialized" })
const thread = await request("thread/start", { cwd: spec.cwd, approvalPolicy: "never", sandbox: "read-only", model: spec.model })
const turn = await request("turn/start", {
  threadId: thread.result?.thread?.id,
  input: [{ type: "text", text: "hi" }],
  approvalPolicy: "never",
  model: spec.model
})
const turnId = turn.result?.turn?.id ?? ""
while (!completedTurns.has(turnId)) await new Promise<void>((resolve) => (onCompleted = resolve))
const status = completedTurns.get(turnId)
process.stdout.write(reply + "\n")
child.stdin.end()
await exited
process.exitCode = status === "completed" ? 0 : 1
