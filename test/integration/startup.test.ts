// Typed start-up: building the Live layer checks what a running harness needs and fails with a typed error naming the
// cause (settings that do not decode, a workspace that does not exist, an unusable state dir or temp dir, a missing or
// wrong codex binary), before any app-server runs; the layer's type says which. A good setup builds with no process.
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { type ConfigError, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Live from "../../layers/Live.js"
import { HookRelayConfig } from "../../src/approvals/HookRelay.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import type { StartupError } from "../../src/harness/Startup.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { leftBehind, tempDir } from "../support/harness.js"

const base = (stateDir: string, cwd: string): HarnessSettings => ({
  stateDir,
  cwd,
  approvalPolicy: "never",
  sandbox: "read-only",
  providerUrl: "http://127.0.0.1:9/v1"
})

/** builds the layer in a scope of its own and yields how the build failed (or undefined when it built) */
const buildError = (settings: HarnessSettings, socketParentDir?: string) =>
  Effect.scoped(
    Layer.build(
      Live.layer(settings).pipe(
        Layer.provide(RecordingDelivery.layer),
        Layer.provide(socketParentDir === undefined ? Layer.empty : Layer.succeed(HookRelayConfig, { socketParentDir }))
      )
    )
  ).pipe(
    Effect.as(undefined),
    Effect.catchAll((error) => Effect.succeed(error))
  )

describe("typed start-up of the Live layer", () => {
  it("the layer's type names every start-up failure", () => {
    type Built = ReturnType<typeof Live.layer>
    expectTypeOf<Layer.Layer.Error<Built>>().toEqualTypeOf<StartupError | ConfigError.ConfigError>()
  })

  it.scopedLive("a good setup builds (the codex binary answers --version) and starts no app-server", () =>
    Effect.gen(function* () {
      const root = yield* tempDir()
      const settings = base(path.join(root, "state"), root)
      expect(yield* buildError(settings)).toBeUndefined()
      // the state dir is made privately at build
      expect(fs.statSync(settings.stateDir).mode & 0o777).toBe(0o700)
      expect(yield* leftBehind(root)).toEqual([])
    }))

  it.scopedLive("settings that do not decode fail with InvalidSettings naming each field", () =>
    Effect.gen(function* () {
      const root = yield* tempDir()
      const wrong = { ...base(root, root), approvalPolicy: "sometimes", quietWindow: "soon", turnTimeot: 5 } as unknown as HarnessSettings
      const error = yield* buildError(wrong)
      expect(error?._tag).toBe("InvalidSettings")
      expect(error?.message).toContain("approvalPolicy")
      expect(error?.message).toContain("quietWindow")
      expect(error?.message).toContain("turnTimeot")
    }))

  it.scopedLive("a workspace that does not exist, or is a file, fails with WorkspaceMissing", () =>
    Effect.gen(function* () {
      const root = yield* tempDir()
      const missing = yield* buildError(base(root, path.join(root, "nowhere")))
      expect(missing).toMatchObject({ _tag: "WorkspaceMissing", cwd: path.join(root, "nowhere"), reason: "it does not exist" })
      fs.writeFileSync(path.join(root, "file"), "")
      expect(yield* buildError(base(root, path.join(root, "file")))).toMatchObject({ _tag: "WorkspaceMissing", reason: "it is not a directory" })
    }))

  it.scopedLive("a state dir that is a file, or that others may write, fails with StateDirUnusable", () =>
    Effect.gen(function* () {
      const root = yield* tempDir()
      fs.writeFileSync(path.join(root, "file"), "")
      const file = yield* buildError(base(path.join(root, "file", "state"), root))
      expect(file?._tag).toBe("StateDirUnusable")
      expect(file?.message).toContain("not a directory")
      const open = path.join(root, "open")
      fs.mkdirSync(open)
      fs.chmodSync(open, 0o777)
      const shared = yield* buildError(base(open, root))
      expect(shared?._tag).toBe("StateDirUnusable")
      expect(shared?.message).toContain("group or others may write it")
    }))

  it.scopedLive("a temp dir that is missing, writable by others without the sticky bit, or too long fails with TempDirUnusable", () =>
    Effect.gen(function* () {
      const root = yield* tempDir()
      const settings = base(path.join(root, "state"), root)
      expect(yield* buildError(settings, path.join(root, "gone"))).toMatchObject({ _tag: "TempDirUnusable", reason: "it does not exist" })
      const open = path.join(root, "open")
      fs.mkdirSync(open)
      fs.chmodSync(open, 0o777)
      const shared = yield* buildError(settings, open)
      expect(shared?._tag).toBe("TempDirUnusable")
      expect(shared?.message).toContain("no sticky bit")
      // /tmp's own mode (others may write, sticky) is fine
      fs.chmodSync(open, 0o1777)
      expect(yield* buildError(settings, open)).toBeUndefined()
      const long = path.join(root, "x".repeat(60), "y".repeat(60))
      fs.mkdirSync(long, { recursive: true })
      const tooLong = yield* buildError(settings, long)
      expect(tooLong?._tag).toBe("TempDirUnusable")
      expect(tooLong?.message).toMatch(/socket's path would be \d+ bytes/)
    }))

  it.scopedLive("a codex binary that is missing fails with CodexBinaryNotFound, one that is not codex with CodexBinaryUnusable", () =>
    Effect.gen(function* () {
      const root = yield* tempDir()
      const settings = base(path.join(root, "state"), root)
      const missing = yield* buildError({ ...settings, codexBin: path.join(root, "no-codex") })
      expect(missing?._tag).toBe("CodexBinaryNotFound")
      const impostor = path.join(root, "impostor")
      fs.writeFileSync(impostor, "#!/bin/sh\necho 'hello from something else'\n", { mode: 0o755 })
      const wrong = yield* buildError({ ...settings, codexBin: impostor })
      expect(wrong).toMatchObject({ _tag: "CodexBinaryUnusable", command: impostor })
      expect(wrong?.message).toContain("hello from something else")
      const failing = path.join(root, "failing")
      fs.writeFileSync(failing, "#!/bin/sh\nexit 3\n", { mode: 0o755 })
      expect((yield* buildError({ ...settings, codexBin: failing }))?.message).toContain("--version failed")
    }))

  it.scopedLive("a process asks a binary for its version once; a binary replaced in place is asked again, and a bad answer is never kept", () =>
    Effect.gen(function* () {
      const root = yield* tempDir()
      const settings = base(path.join(root, "state"), root)
      const asked = path.join(root, "asked.log")
      const codex = path.join(root, "codex")
      const script = (version: string) => `#!/bin/sh\necho asked >> '${asked}'\necho 'codex-cli ${version}'\n`
      const times = () => (fs.existsSync(asked) ? fs.readFileSync(asked, "utf8").split("\n").filter((l) => l !== "").length : 0)
      fs.writeFileSync(codex, script("0.171.0"), { mode: 0o755 })
      expect(yield* buildError({ ...settings, codexBin: codex })).toBeUndefined()
      expect(yield* buildError({ ...settings, codexBin: codex })).toBeUndefined()
      expect(times()).toBe(1)
      // rewritten where it is (another size): asked again, and its new answer is what counts
      fs.writeFileSync(codex, "#!/bin/sh\necho asked >> '" + asked + "'\necho 'not codex at all'\n", { mode: 0o755 })
      expect(yield* buildError({ ...settings, codexBin: codex })).toMatchObject({ _tag: "CodexBinaryUnusable" })
      expect(yield* buildError({ ...settings, codexBin: codex })).toMatchObject({ _tag: "CodexBinaryUnusable" })
      expect(times()).toBe(3)
      fs.writeFileSync(codex, script("0.172.10"), { mode: 0o755 })
      expect(yield* buildError({ ...settings, codexBin: codex })).toBeUndefined()
      expect(times()).toBe(4)
    }))
})
