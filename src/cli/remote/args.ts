// The command lines the --connect client takes itself: `run` and `chat` with `--connect URL` and the flags that mean
// something through a serve. Anything else (another flag, a runtime flag the serve would not apply, a value that does
// not fit, `--log-level`, a second PROMPT) is not refused here but left to the CLI (undefined), which parses it with
// @effect/cli and says what is wrong in its own words: this only takes what it is sure means the same there. Pure.

export type TurnKind = "user" | "heartbeat" | "lightweight" | "ringZero" | "messageOnly" | "toolDisabled"

interface Common {
  readonly connect: string
  readonly stateDir: string | undefined
  readonly model: string | undefined
  readonly session: string | undefined
  readonly last: boolean
  readonly json: boolean
}

export type Parsed =
  | Common & {
    readonly command: "run"
    readonly approvals: "deny" | "allow" | "ask"
    readonly turnKind: TurnKind | undefined
    readonly outputLastMessage: string | undefined
    readonly prompt: string | undefined
  }
  | Common & { readonly command: "chat" }

const turnKinds: ReadonlyArray<string> = ["user", "heartbeat", "lightweight", "ringZero", "messageOnly", "toolDisabled"]

interface FlagSpec {
  readonly key: string
  /** undefined: a boolean flag; else the values it takes (empty: any text) */
  readonly values: ReadonlyArray<string> | undefined
}

const flagsOf = (command: "run" | "chat"): ReadonlyMap<string, FlagSpec> => {
  const flags = new Map<string, FlagSpec>([
    ["--connect", { key: "connect", values: [] }],
    ["--state-dir", { key: "stateDir", values: [] }],
    ["--model", { key: "model", values: [] }],
    ["-m", { key: "model", values: [] }],
    ["--session", { key: "session", values: [] }],
    ["--last", { key: "last", values: undefined }],
    ["--json", { key: "json", values: undefined }],
    ["--approvals", { key: "approvals", values: command === "run" ? ["deny", "allow", "ask"] : ["deny", "allow"] }]
  ])
  if (command === "run") {
    flags.set("--turn-kind", { key: "turnKind", values: turnKinds })
    flags.set("--output-last-message", { key: "outputLastMessage", values: [] })
    flags.set("-o", { key: "outputLastMessage", values: [] })
  }
  return flags
}

/** `args`: the words after the program's name, starting with the command */
export const parse = (args: ReadonlyArray<string>): Parsed | undefined => {
  const command = args[0]
  if (command !== "run" && command !== "chat") return undefined
  const flags = flagsOf(command)
  const given = new Map<string, string | true>()
  const positionals: Array<string> = []
  for (let i = 1; i < args.length; i++) {
    const word = args[i]!
    if (word === "--") {
      positionals.push(...args.slice(i + 1))
      break
    }
    if (!word.startsWith("-") || word === "-") {
      positionals.push(word)
      continue
    }
    const equals = word.startsWith("--") ? word.indexOf("=") : -1
    const name = equals > 0 ? word.slice(0, equals) : word
    const spec = flags.get(name)
    if (spec === undefined || given.has(spec.key)) return undefined
    if (spec.values === undefined) {
      if (equals > 0) return undefined
      given.set(spec.key, true)
      continue
    }
    const value = equals > 0 ? word.slice(equals + 1) : args[++i]
    // a forgotten value (`--model --json`) or one the flag does not take: the CLI says which
    if (value === undefined || (equals < 0 && value.startsWith("-") && value !== "-")) return undefined
    if (spec.values.length > 0 && !spec.values.includes(value)) return undefined
    given.set(spec.key, value)
  }
  const text = (key: string) => (typeof given.get(key) === "string" ? (given.get(key) as string) : undefined)
  const connect = text("connect")
  if (connect === undefined) return undefined
  const common: Common = {
    connect,
    stateDir: text("stateDir"),
    model: text("model"),
    session: text("session"),
    last: given.get("last") === true,
    json: given.get("json") === true
  }
  if (command === "chat") return positionals.length === 0 ? { ...common, command } : undefined
  if (positionals.length > 1) return undefined
  return {
    ...common,
    command,
    approvals: (text("approvals") ?? "deny") as "deny" | "allow" | "ask",
    turnKind: text("turnKind") as TurnKind | undefined,
    outputLastMessage: text("outputLastMessage"),
    prompt: positionals[0]
  }
}
