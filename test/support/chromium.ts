// The Chromium the browser test drives through playwright-core: CHROMIUM_PATH when set, else Debian's /usr/bin/chromium
// when present, else npm's: the `@sparticuz/chromium` dev dependency, a headless Chromium built to run anywhere, which
// ships brotli-packed in the package (the browser, SwiftShader's GL libraries, libnss3/libnspr4/libexpat built for
// Amazon Linux 2023, and the Open Sans font). It is unpacked once per user and package version into a cache directory
// these tests own (~/.cache/codex-harness-tests/chromium-VERSION, or, when the home directory cannot be written,
// $TMPDIR/codex-harness-tests-UID, 0700 and this user's): by the package's own inflate(), in a child process whose
// TMPDIR is a fresh staging dir in the cache (the package unpacks into $TMPDIR, and its executablePath() trusts any
// existing $TMPDIR/chromium, whatever its version or owner), which is renamed into place once complete, so two test
// processes never see a half-unpacked browser. It runs with LD_LIBRARY_PATH on its bundled libraries, FONTCONFIG_PATH
// on a fonts.conf for its font (with no font it crashes on the first text), and --no-sandbox (as root and in containers
// the sandbox cannot start). No network: everything comes from the package npm installed.
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { testCacheDir } from "./testCache.js"

export interface ChromiumLaunch {
  readonly executablePath: string
  /** the browser's environment (undefined: this process's) */
  readonly env: NodeJS.ProcessEnv | undefined
  readonly args: ReadonlyArray<string>
  /** where it came from: CHROMIUM_PATH, /usr/bin/chromium or npm */
  readonly source: "CHROMIUM_PATH" | "/usr/bin/chromium" | "npm"
}

const debianChromium = "/usr/bin/chromium"

const unpackScript = `
import { join } from "node:path"
const { default: Chromium, inflate } = await import(process.argv[1])
const bin = process.argv[2]
await Chromium.executablePath(bin)
await inflate(join(bin, "al2023.tar.br"))
`

const unpack = (entry: string, binDir: string, staging: string, timeoutMs: number) =>
  new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      ["--input-type=module", "-e", unpackScript, pathToFileURL(entry).href, binDir],
      { env: { ...process.env, TMPDIR: staging }, timeout: timeoutMs, killSignal: "SIGKILL", cwd: staging },
      (error, _stdout, stderr) =>
        error === null
          ? resolve()
          : reject(new Error(`unpacking @sparticuz/chromium into ${staging}: ${error.killed ? `timed out after ${timeoutMs} ms` : stderr.trim()}`))
    )
  })

const fontsConf = (dir: string) =>
  `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir>${path.join(dir, "fonts")}</dir>
  <cachedir>${path.join(dir, "fonts-cache")}</cachedir>
</fontconfig>
`

/** npm's Chromium, unpacked into the cache when it is not there yet (9-25 s, once); its path and environment */
export const npmChromium = async (timeoutMs = 300_000): Promise<ChromiumLaunch> => {
  const require = createRequire(import.meta.url)
  const entry = require.resolve("@sparticuz/chromium")
  const pkgDir = path.resolve(path.dirname(entry), "..")
  const version = (JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8")) as { version: string }).version
  const cache = testCacheDir()
  const dir = path.join(cache, `chromium-${version}`)
  const complete = path.join(dir, ".complete")
  if (!fs.existsSync(complete)) {
    const staging = fs.mkdtempSync(path.join(cache, `.chromium-${version}-`))
    try {
      await unpack(entry, path.join(pkgDir, "bin"), staging, timeoutMs)
      fs.writeFileSync(path.join(staging, "fonts.conf"), fontsConf(dir))
      fs.writeFileSync(path.join(staging, ".complete"), `@sparticuz/chromium ${version}\n`)
      try {
        fs.renameSync(staging, dir)
      } catch (e) {
        // another test process put its own in place first: that one is as good
        if (!fs.existsSync(complete)) throw new Error(`${dir} is there but incomplete (${(e as Error).message}): remove it`)
      }
    } finally {
      fs.rmSync(staging, { recursive: true, force: true })
    }
  }
  const libs = path.join(dir, "al2023", "lib")
  const ld = process.env["LD_LIBRARY_PATH"]
  return {
    executablePath: path.join(dir, "chromium"),
    env: { ...process.env, LD_LIBRARY_PATH: ld ? `${libs}:${ld}` : libs, FONTCONFIG_PATH: dir },
    args: ["--no-sandbox"],
    source: "npm"
  }
}

/** CHROMIUM_PATH, Debian's chromium, or npm's */
export const findChromium = async (): Promise<ChromiumLaunch> => {
  const chosen = process.env["CHROMIUM_PATH"]
  if (chosen !== undefined && chosen !== "") {
    if (!fs.existsSync(chosen)) throw new Error(`CHROMIUM_PATH=${chosen} does not exist`)
    return { executablePath: chosen, env: undefined, args: ["--no-sandbox"], source: "CHROMIUM_PATH" }
  }
  if (fs.existsSync(debianChromium)) return { executablePath: debianChromium, env: undefined, args: ["--no-sandbox"], source: debianChromium }
  return npmChromium()
}
