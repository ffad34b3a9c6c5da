// The bundled command line (dist/bundle/cli.cjs, which npm test builds first) and its V8 code cache, in a copy of the
// package's layout: a run with no cache writes one; a cache V8 rejects is replaced; a run under other node flags than
// the shebang's keeps a cache of its own (V8 rejects a cache written under other flags); a bundle directory that others
// may write to gets no cache (a cache is code); the first turn command after the build writes the cache again, once,
// with the turn's code in it.
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { shebangFlags } from "../support/cli.js"

const copyPackage = () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "code-cache-"))
  // the bin with its package.json (it is a CommonJS script in an ES module package)
  fs.cpSync(path.resolve("bin"), path.join(root, "bin"), { recursive: true })
  fs.cpSync(path.resolve("dist/bundle"), path.join(root, "dist", "bundle"), { recursive: true })
  // no cache of any flags, nor its marker: a checkout's bundle may hold those of runs under other flags (--cpu-prof, none)
  for (const file of fs.readdirSync(path.join(root, "dist", "bundle"))) {
    if (/^cli\.(code-cache|turn-cached)/.test(file)) fs.rmSync(path.join(root, "dist", "bundle", file), { force: true })
  }
  return root
}

/**
 * the schema, from the copy's bin run as the installed command (its shebang's flags), or with no flags. A child process
 * waited on asynchronously: a spawnSync held this worker's event loop for each whole run, and under load the five of
 * them outlasted vitest's 60 s bound on a worker's report to the runner ("Timeout calling onTaskUpdate")
 */
/** an empty piped `chat` of the copy: a turn command that ends before any turn (no app-server is started: the copy has no codex, and the named one is never run) */
const emptyChat = (root: string) =>
  new Promise<void>((resolve, reject) => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "code-cache-state-"))
    const child = execFile(process.execPath, [...shebangFlags, path.join(root, "bin", "codex-harness.js"), "chat", "--state-dir", stateDir, "--codex-bin", "/bin/false"], { encoding: "utf8", timeout: 120_000 }, (error) => {
      fs.rmSync(stateDir, { recursive: true, force: true })
      if (error === null) resolve()
      else reject(error)
    })
    child.stdin?.end()
  })

const schemaOf = (root: string, flags: ReadonlyArray<string> = shebangFlags) =>
  new Promise<{ readonly $schema?: string }>((resolve, reject) => {
    execFile(process.execPath, [...flags, path.join(root, "bin", "codex-harness.js"), "config", "schema"], { encoding: "utf8", timeout: 120_000 }, (error, stdout, stderr) => {
      try {
        expect(stderr).toBe("")
        expect(error).toBeNull()
        resolve(JSON.parse(stdout) as { readonly $schema?: string })
      } catch (e) {
        reject(e)
      }
    })
  })

describe("the bundled CLI's code cache", () => {
  it("a run without a cache writes one; a rejected cache is replaced; an open directory gets none", async () => {
    const root = copyPackage()
    const bundle = path.join(root, "dist", "bundle")
    const cache = path.join(bundle, "cli.code-cache")
    try {
      fs.chmodSync(bundle, 0o755)
      const expected = await schemaOf(root)
      expect(expected.$schema).toBeDefined()
      expect(fs.statSync(cache).size).toBeGreaterThan(100_000)

      // bytes V8 cannot use (as from another Node version): the run still works, and leaves a usable cache
      fs.writeFileSync(cache, Buffer.alloc(4096, 7))
      expect(await schemaOf(root)).toEqual(expected)
      expect(fs.statSync(cache).size).toBeGreaterThan(100_000)
      expect(fs.readdirSync(bundle).filter((f) => f.startsWith("cli.code-cache."))).toEqual([])

      // `node bin/...` without the shebang's flags: a cache of its own, the shebang's stays as it was
      expect(shebangFlags.length).toBeGreaterThan(0)
      const before = fs.readFileSync(cache)
      expect(await schemaOf(root, [])).toEqual(expected)
      const own = fs.readdirSync(bundle).filter((f) => /^cli\.code-cache-[0-9a-f]{8}$/.test(f))
      expect(own).toHaveLength(1)
      expect(fs.statSync(path.join(bundle, own[0]!)).size).toBeGreaterThan(100_000)
      expect(fs.readFileSync(cache).equals(before)).toBe(true)
      fs.rmSync(path.join(bundle, own[0]!))

      // others may write to the directory: nothing is cached there
      fs.rmSync(cache)
      fs.chmodSync(bundle, 0o777)
      expect(await schemaOf(root)).toEqual(expected)
      expect(fs.existsSync(cache)).toBe(false)
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

  it("the first turn command after the build writes the cache again with its code, once", async () => {
    const root = copyPackage()
    const bundle = path.join(root, "dist", "bundle")
    const cache = path.join(bundle, "cli.code-cache")
    const marker = path.join(bundle, "cli.turn-cached")
    try {
      fs.chmodSync(bundle, 0o755)
      await schemaOf(root)
      const built = fs.readFileSync(cache)
      expect(fs.existsSync(marker)).toBe(false)
      await emptyChat(root)
      const folded = fs.readFileSync(cache)
      expect(fs.existsSync(marker)).toBe(true)
      expect(folded.length).toBeGreaterThan(built.length)
      // once: the next turn command reads it and leaves it as it is
      await emptyChat(root)
      expect(fs.readFileSync(cache).equals(folded)).toBe(true)
      expect(fs.readdirSync(bundle).filter((f) => f.startsWith("cli.code-cache."))).toEqual([])
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })
})
