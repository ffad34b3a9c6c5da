// An app-server that dies names the last stderr line that may be the reason, never the start-up warnings the pinned
// binary prints on every machine without bubblewrap (checked with stand-in executables through the real transport).
import { describe, expect, it } from "@effect/vitest"
import { NodeFileSystem } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Connection from "../../src/appserver/AppServerConnection.js"
import { AppServerExited } from "../../src/appserver/errors.js"
import { NodeTransportLive, Transport } from "../../src/appserver/Transport.js"
import { tempDir } from "../support/harness.js"

// as 0.171.0 prints them at start (the second one coloured by tracing)
const warnings =
  `WARNING: proceeding, even though we could not create PATH aliases: Refusing to create helper binaries under temporary dir "/tmp"\n` +
  `\x1b[2m2026-01-01T00:00:00.000000Z\x1b[0m \x1b[31mERROR\x1b[0m \x1b[2mcodex_app_server\x1b[0m\x1b[2m:\x1b[0m Codex could not find ` +
  `bubblewrap on PATH. Install bubblewrap with your OS package manager. Codex will use the bundled bubblewrap in the meantime.\n`

/** a stand-in codex that prints `stderr`, then exits 1 when the client's first line arrives */
const crashing = (stderr: string) =>
  Effect.gen(function* () {
    const file = path.join(yield* tempDir(), "codex")
    fs.writeFileSync(
      file,
      `#!/usr/bin/env node\nprocess.stderr.write(${JSON.stringify(stderr)}, () => process.stdin.once("data", () => process.exit(1)))\n`,
      { mode: 0o755 }
    )
    const handle = yield* Effect.flatMap(Transport, (t) => t.spawn({ codexBin: file }))
    const error = yield* Connection.make(handle).pipe(Effect.flip)
    expect(error).toBeInstanceOf(AppServerExited)
    return error as AppServerExited
  })

const live = NodeTransportLive.pipe(Layer.provide(NodeFileSystem.layer))

describe("the app-server's crash message", () => {
  it.scoped("quotes no start-up warning as the cause", () =>
    Effect.gen(function* () {
      const exited = yield* crashing(warnings)
      expect(exited.exitCode).toBe(1)
      // the record keeps everything; the one line leaves the warnings out
      expect(exited.stderrTail).toContain("bubblewrap")
      expect(exited.message).toBe("the codex app-server exited with code 1")
    }).pipe(Effect.provide(live))
  )

  it.scoped("quotes the last line that is not a known warning, without colours", () =>
    Effect.gen(function* () {
      const exited = yield* crashing(`\x1b[31mERROR\x1b[0m codex_core: config.toml: unknown field\n${warnings}`)
      expect(exited.message).toBe("the codex app-server exited with code 1: ERROR codex_core: config.toml: unknown field")
    }).pipe(Effect.provide(live))
  )
})
