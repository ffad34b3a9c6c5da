// $CODEX_HARNESS_APP_SERVER_CONFIG: `codex -c` overrides for every app-server the harness starts, one key=value a line,
// placed before the harness's own so that the harness's keys win; a line that is not key=value is refused, never skipped.
import { describe, expect, it } from "@effect/vitest"
import { appServerArgv, appServerConfigArgs } from "../../src/appserver/CodexArgs.js"

const env = (value: string | undefined) => ({ CODEX_HARNESS_APP_SERVER_CONFIG: value })

describe("app-server config overrides from the environment", () => {
  it("each key=value line is one -c pair, blank lines and surrounding spaces ignored; no variable, no pairs", () => {
    expect(appServerConfigArgs(env("features.shell_snapshot=false\n\n  model_reasoning_effort=\"low\"  \n"))).toEqual([
      "-c",
      "features.shell_snapshot=false",
      "-c",
      'model_reasoning_effort="low"'
    ])
    // a value may itself hold `=` (a TOML inline table)
    expect(appServerConfigArgs(env("tools={a=1}"))).toEqual(["-c", "tools={a=1}"])
    expect(appServerConfigArgs(env(undefined))).toEqual([])
    expect(appServerConfigArgs(env(""))).toEqual([])
  })

  it("a line that is not key=value is named with its number, and nothing is taken", () => {
    expect(appServerConfigArgs(env("a=1\nfeatures.shell_snapshot"))).toBe(
      '$CODEX_HARNESS_APP_SERVER_CONFIG line 2: expected key=value (a codex -c override), got "features.shell_snapshot"'
    )
    expect(appServerConfigArgs(env("=false"))).toMatch(/^\$CODEX_HARNESS_APP_SERVER_CONFIG line 1: expected key=value/)
  })

  it("the overrides come before the harness's own -c pairs, so a key both set is the harness's (Codex takes the last)", () => {
    const argv = appServerArgv(["/codex.js"], ["-c", "model=\"m\""], ["-c", "shell_environment_policy.exclude=[\"K\"]"], [
      "-c",
      "thread_unload_delay_secs=60",
      "-c",
      "shell_environment_policy.exclude=[]"
    ])
    expect(argv).toEqual([
      "/codex.js",
      "-c",
      "thread_unload_delay_secs=60",
      "-c",
      "shell_environment_policy.exclude=[]",
      "-c",
      "thread_unload_delay_secs=0",
      "-c",
      "model=\"m\"",
      "-c",
      "shell_environment_policy.exclude=[\"K\"]",
      "app-server"
    ])
  })
})
