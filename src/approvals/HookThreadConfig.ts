// The per-thread hook config the relay installs (S20): Codex's event names and timeouts, the trusted hash of each
// one-handler group (how Codex's `currentHash` is computed is at the top of HookRelay.ts), the relay command for each
// event and the no-op command for events nothing here decides. All pure but `defaultRelayCommand`, which looks for the
// package's own bin next to this module (so it stays in this folder: the path is found from here).
import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import * as crypto from "node:crypto"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { NativeHookEvent } from "../../schemas/config.js"
import type { HookPolicyService } from "../ports/HookPolicy.js"
import type { HookEventName } from "./HookRelayServer.js"

export const eventNames: Readonly<Record<NativeHookEvent, HookEventName>> = {
  pre_tool_use: "PreToolUse",
  post_tool_use: "PostToolUse",
  permission_request: "PermissionRequest",
  stop: "Stop"
}

/** seconds Codex waits for each hook; PreToolUse and PermissionRequest may wait for a person */
export const defaultTimeouts: Readonly<Record<NativeHookEvent, number>> = {
  pre_tool_use: 600,
  post_tool_use: 30,
  permission_request: 600,
  stop: 30
}

/** the session-flags layer key Codex gives the first handler of the first group of an event */
export const hookStateKey = (event: NativeHookEvent) => `/<session-flags>/config.toml:${event}:0:0`

export interface CommandHook {
  readonly command: string
  readonly timeout: number
  readonly statusMessage: string
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const sortKeys = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(sortKeys)
    : isRecord(value)
    ? Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortKeys(value[k])]))
    : value

/** Codex's `currentHash` of a one-handler hook group (see the top of HookRelay.ts). Pure. */
export const trustHash = (event: NativeHookEvent, matcher: string | undefined, hook: CommandHook): string => {
  const identity = {
    event_name: event,
    hooks: [{ type: "command", command: hook.command, timeout: hook.timeout, statusMessage: hook.statusMessage, async: false }],
    ...(matcher !== undefined ? { matcher } : {})
  }
  return "sha256:" + crypto.createHash("sha256").update(JSON.stringify(sortKeys(identity))).digest("hex")
}

const safeWord = /^[A-Za-z0-9_@%+=:,./-]+$/
/** POSIX shell quoting (Codex runs hook commands through a shell). Pure. */
export const shellQuote = (word: string) => (safeWord.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)

/** The matcher tool events get; Stop has none. */
const matcherOf = (event: NativeHookEvent) => (event === "stop" ? undefined : "*")

/**
 * The thread `config` entries for the relayed events: `features.hooks`, one `hooks.<Event>` group per event and the
 * trust state for each. Pure.
 */
export const threadHookConfig = (
  events: ReadonlyArray<NativeHookEvent>,
  hookFor: (event: NativeHookEvent) => CommandHook
): Record<string, unknown> => {
  const unique = [...new Set(events)]
  if (unique.length === 0) return {}
  const config: Record<string, unknown> = { "features.hooks": true }
  const state: Record<string, { trusted_hash: string; enabled: boolean }> = {}
  for (const event of unique) {
    const hook = hookFor(event)
    const matcher = matcherOf(event)
    config[`hooks.${eventNames[event]}`] = [
      { ...(matcher !== undefined ? { matcher } : {}), hooks: [{ type: "command", ...hook }] }
    ]
    state[hookStateKey(event)] = { trusted_hash: trustHash(event, matcher, hook), enabled: true }
  }
  config["hooks.state"] = state
  return config
}

/** `node <repo>/bin/codex-harness.js hook-relay`: the package's own command, found from this module. */
export const defaultRelayCommand: Effect.Effect<ReadonlyArray<string>, never, FileSystem.FileSystem> = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const here = path.dirname(fileURLToPath(import.meta.url))
  let dir = here
  for (let i = 0; i < 6; i++) {
    const bin = path.join(dir, "bin", "codex-harness.js")
    if (yield* fs.exists(bin).pipe(Effect.orElseSucceed(() => false))) return [process.execPath, bin, "hook-relay"]
    dir = path.dirname(dir)
  }
  return [process.execPath, path.resolve(here, "../../../bin/codex-harness.js"), "hook-relay"]
})

/**
 * The hook's command for an event nothing in this process decides (no HookPolicy member for PreToolUse, PostToolUse or
 * Stop): the relay could only answer "no decision" (exit 0, no output), and this says the same without starting a Node
 * process for every tool call and every turn's end (0.1-0.2 s each). The hook is still injected, so the thread's own
 * config keeps overriding any hooks.json (S20).
 */
export const noDecisionCommand = "true"

/** Whether anything in this process decides the event; PermissionRequest always asks the ApprovalPrompts port. Pure. */
export const relayed = (event: NativeHookEvent, policy: HookPolicyService): boolean => {
  switch (event) {
    case "pre_tool_use":
      return policy.preToolUse !== undefined
    case "post_tool_use":
      return policy.postToolUse !== undefined
    case "stop":
      return policy.stop !== undefined
    case "permission_request":
      return true
  }
}

/**
 * How long the relay waits for a decision (`--timeout-ms`): Codex's hook timeout less 10% of it, at most 5 s, so the
 * relay gives its own answer (PreToolUse and PermissionRequest refused) before Codex kills the hook and goes on
 * without one. Pure.
 */
export const relayTimeoutMs = (timeoutSeconds: number): number => {
  const ms = Math.max(0, Math.round(timeoutSeconds * 1000))
  return Math.max(1, ms - Math.min(5000, Math.ceil(ms / 10)))
}

/**
 * The hook's command: the socket, the file that holds the session's token (never the token: a command line is readable
 * by every user), the event and the relay's own deadline. The same for a session for the server's life, so its trust
 * hash is too. Pure.
 */
export const relayCommandLine = (
  prefix: ReadonlyArray<string>,
  socketPath: string,
  tokenFile: string,
  event: HookEventName,
  timeoutSeconds: number,
  approvalMode?: "report" | undefined
): string =>
  [
    ...prefix,
    "--socket",
    socketPath,
    "--token-file",
    tokenFile,
    "--event",
    event,
    "--timeout-ms",
    String(relayTimeoutMs(timeoutSeconds)),
    ...(approvalMode !== undefined ? ["--approval-mode", approvalMode] : [])
  ].map(shellQuote).join(" ")
