// What every row of bench/figures.ts shares: the scripted model, the codex command and its provider overrides, fresh
// directories, and the command lines of the two sides (the compiled CLI through bin/codex-harness.js, the raw floor).
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { defaultTimeouts, noDecisionCommand, threadHookConfig } from "../../src/approvals/HookThreadConfig.js"
import * as CodexArgs from "../../src/appserver/CodexArgs.js"
import * as CodexBinary from "../../src/appserver/CodexBinary.js"
import { defaultNativeHookEvents } from "../../src/config/HarnessConfig.js"
import type { ScriptedModel } from "../../src/testing/ScriptedModel.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import type { RawConfig } from "../floor/raw-client.js"
import { type Leftovers, marked, settle, type Timed } from "./proc.js"

/** the scripted model's answer to every plain message */
export const REPLY = "ok from the scripted model"
/** its answer once a message's three commands have run */
export const TOOL_REPLY = "three commands ran"
/** the model the CLI asks a --provider-url server for when none is chosen; the raw floor asks for the same */
export const MODEL = CodexArgs.defaultLocalModel

const here = path.dirname(fileURLToPath(import.meta.url)) // dist/bench/figures
export const repoRoot = path.resolve(here, "../../..")
export let cliBin = path.join(repoRoot, "bin", "codex-harness.js")
/** --bin: another checkout's bin/codex-harness.js (a before/after comparison in one run) */
export const useCliBin = (bin: string) => {
  cliBin = path.resolve(bin)
}
export const rawClient = path.resolve(here, "../floor/raw-client.js")
export const harnessSessions = path.join(here, "harness-sessions.js")

export interface Context {
  readonly model: ScriptedModel
  readonly codex: { readonly command: string; readonly args: ReadonlyArray<string> }
  readonly root: string
  /** the agent's workspace, the same for both sides */
  readonly work: string
  /**
   * what every measured process gets on top of this one's environment: HOME an empty directory, so that no login shell
   * (Codex's shell snapshot at thread start, each command before the snapshot is ready) runs this machine's rc files.
   * They cost a second per login shell here (pyenv), compete for the 2 CPUs, and a floor that kills the snapshot shell
   * half way through `pyenv rehash` leaves pyenv's lock behind, after which every login shell on the machine waits 60 s.
   */
  readonly env: Readonly<Record<string, string>>
  /** every marked process seen at the end of a measurement, and the ones that stayed */
  readonly leftovers: { atEnd: number; left: Array<string> }
}

export const make = (model: ScriptedModel): Context => {
  const found = CodexBinary.candidates().find((c) => fs.existsSync(c.prefixArgs[0] ?? c.command))
  if (found === undefined) throw new Error("no codex binary: run npm ci")
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "codex-figures-"))
  const work = path.join(root, "work")
  fs.mkdirSync(work)
  const home = path.join(root, "home")
  fs.mkdirSync(home)
  return {
    model,
    codex: { command: found.command, args: [...found.prefixArgs, ...CodexArgs.providerArgs(model.url, MODEL), "app-server"] },
    root,
    work,
    env: { HOME: home },
    leftovers: { atEnd: 0, left: [] }
  }
}

let dirs = 0
export const freshDir = (ctx: Context, label: string): string => {
  const dir = path.join(ctx.root, `${label}-${dirs++}`)
  fs.mkdirSync(dir)
  return dir
}

let prefixes = 0
/** a fresh message prefix: message i of thread t is `${prefix}${t}m${i}]`, unique in the whole run */
export const freshPrefix = (): string => `[r${prefixes++}t`
export const message = (prefix: string, thread: number, turn: number) => `${prefix}${thread}m${turn}]`

/**
 * The thread config the harness sends when no HookPolicy decides anything (approval policy "never": all four events S20
 * makes it inject), every hook the no-op `true`: the raw floor run with it (rawArgs' `threadConfig`) does Codex's share
 * of the harness's hooks and nothing else (bench/hook-floor.ts, the hot row).
 */
export const noOpHooks: Readonly<Record<string, unknown>> = threadHookConfig(
  defaultNativeHookEvents("never"),
  (event) => ({ command: noDecisionCommand, timeout: defaultTimeouts[event], statusMessage: "bench: no-op" })
)

/** the raw floor's command line (after `node`) for a fresh CODEX_HOME */
export const rawArgs = (
  ctx: Context,
  options: {
    readonly threads: number
    readonly turns: number
    readonly prefix: string
    readonly report: boolean
    readonly threadConfig?: Readonly<Record<string, unknown>> | undefined
  }
): ReadonlyArray<string> => {
  const config: RawConfig = {
    command: ctx.codex.command,
    args: ctx.codex.args,
    env: { ...CodexArgs.providerEnv(), CODEX_HOME: freshDir(ctx, "raw-home") },
    cwd: ctx.work,
    model: MODEL,
    approvalPolicy: "never",
    sandbox: "read-only",
    ...options
  }
  return [rawClient, JSON.stringify(config)]
}

/**
 * node's arguments that run the bin as the installed command does: its shebang's node flags (V8's, which its code cache
 * was written under), then the bin
 */
export const cliNode = (): ReadonlyArray<string> => {
  const line = fs.readFileSync(cliBin, "utf8").split("\n")[0]!
  const flags = (/^#!.*?\bnode\b(.*)$/.exec(line)?.[1] ?? "").trim().split(/\s+/).filter((a) => a !== "")
  return [...flags, cliBin]
}

/** the CLI's command line (after `node`) with a fresh state dir: a new session, its own CODEX_HOME under the state dir */
export const cliArgs = (ctx: Context, command: "run" | "chat", ...rest: ReadonlyArray<string>): ReadonlyArray<string> => [
  ...cliNode(),
  command,
  "--state-dir",
  freshDir(ctx, "cli-state"),
  "--cwd",
  ctx.work,
  "--provider-url",
  ctx.model.url,
  ...rest
]

/**
 * Scripts three `exec_command` calls, one after the other, for each message: the message brings the first call, the
 * first call's command (now in the request) the second, and so on; the third brings TOOL_REPLY. Each rule is used once,
 * so the history a later request carries cannot match it again.
 */
export const scriptToolTurns = (ctx: Context, prefix: string, threads: number, turns: number): void => {
  const id = prefix.slice(2, -1)
  for (let t = 0; t < threads; t++) {
    for (let i = 0; i < turns; i++) {
      const marker = (c: number) => `fig${id}t${t}m${i}c${c}z`
      const call = (c: number) => reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: `echo ${marker(c)}` } })
      const rules = [
        { whenRequestIncludes: marker(3), reply: reply.text(TOOL_REPLY), once: true },
        { whenRequestIncludes: marker(2), reply: call(3), once: true },
        { whenRequestIncludes: marker(1), reply: call(2), once: true },
        { whenRequestIncludes: message(prefix, t, i), reply: call(1), once: true }
      ]
      for (const rule of rules) Effect.runSync(ctx.model.addRule(rule))
    }
  }
}

/** replies of a finished CLI process: every line of stdout that is exactly `text` */
export const countLines = (stdout: string, text: string) => stdout.split("\n").filter((l) => l === text).length

/** fails unless the process exited 0 (and printed `expectReplies` replies of `text`, when given) */
export const check = (what: string, run: Timed, text?: string, expectReplies?: number): Timed => {
  const replies = text !== undefined ? countLines(run.stdout, text) : undefined
  if (run.code !== 0 || (expectReplies !== undefined && replies !== expectReplies)) {
    const tail = run.stderr.trim().split("\n").slice(-3).join(" / ")
    throw new Error(
      `${what}: exit ${run.signal ?? run.code}${replies !== undefined ? `, ${replies}/${expectReplies} replies` : ""}; stderr: ${tail}`
    )
  }
  return run
}

/** after each measured process: every process it started must be gone within the grace */
export const cleanUp = async (ctx: Context): Promise<void> => {
  const found: Leftovers = await settle()
  ctx.leftovers.atEnd += found.atEnd
  ctx.leftovers.left.push(...found.left)
}

/** The run's finalizer: every process the bench marked is killed and the context's temp root removed. */
export const cleanUpAfter = (ctx: Context) =>
  Effect.addFinalizer(() =>
    Effect.sync(() => {
      for (const pid of marked()) {
        try {
          process.kill(pid, "SIGKILL")
        } catch {}
      }
      fs.rmSync(ctx.root, { recursive: true, force: true })
    })
  )
