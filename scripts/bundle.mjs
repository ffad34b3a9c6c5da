// The production command line (issue 13): `npm run build` runs this after tsc. tsc type-checks and writes dist/ for the
// library exports and the tests; this bundles the command line into dist/bundle/, because loading the compiled module
// graph (hundreds of files of effect, @effect/cli and the harness) was most of a cold start.
//
//   dist/bundle/cli.cjs         the whole command line in one script. Each command's implementation is still loaded
//                               only when it runs: a handler's dynamic import becomes a module whose top level the
//                               bundle runs on first use, so parsing a command runs no harness code.
//   dist/bundle/cli.code-cache  V8's compiled code for cli.cjs, written by a first run (below): bin/codex-harness.js
//                               compiles the script with it, which cut loading the CLI from 0.31 s to 0.08 s here.
//                               The first `run` or `chat` writes it again with the turn's code (cli.turn-cached marks it).
//                               Node 20 can use a code cache only for a script (vm.Script), not for an ES module,
//                               which is why the CLI is one CommonJS file and not ES chunks.
//   dist/bundle/help.json       every help page, rendered from the command tree, for a `--help` that loads nothing
//   dist/bundle/hook-relay.cjs  `codex-harness hook-relay`, which Codex starts for every relayed hook: one file of
//                               Node's own modules, built apart so it loads nothing of the CLI
//   dist/bundle/prelaunch.cjs   a cold `run`'s early spawn of its app-server (src/cli/prelaunch.ts), before cli.cjs loads
//   dist/bundle/connect.cjs     `run --connect` and `chat --connect` (src/cli/remote/entry.ts): the control API over
//                               Node's http without Effect, and the event printer, which the bin runs instead of the CLI
//   dist/bundle/control-ui.js   the Control UI's script (src/control/ui/app.ts) for the browser, and
//   dist/bundle/control-ui.html its page: `serve` reads both at start and serves them as /ui.js and / (src/cli/serve.ts)
//
// Minified for Node 20, with linked source maps: `NODE_OPTIONS=--enable-source-maps codex-harness ...` prints stack
// traces with src/ files and lines (the bin then loads cli.cjs with require, which reads the map). Not on by default:
// Node then reads and parses every map as its module loads, which made a start take half as long again and 35 MB more
// (and the CLI prints a failure as one line, never a stack). Every dependency is bundled: the bundle needs nothing
// from node_modules at run time but the codex binary, which is found at run time through @openai/codex (never imported).
import * as esbuild from "esbuild"
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const outdir = path.join(root, "dist", "bundle")

const common = {
  absWorkingDir: root,
  outdir,
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  minify: true,
  sourcemap: "linked",
  // the maps name src/ and node_modules/ files by path; their text is not needed to name a file and a line
  sourcesContent: false,
  logLevel: "warning"
}

/**
 * @effect/cli imports the yaml, toml and ini parsers for `Options.fileParse` and `Args.fileParse`, which this CLI does
 * not use. They are CommonJS, so the bundler can neither drop them nor defer them: their 150 KB were parsed and run at
 * every start, `--help` included (about a tenth of its time). In their place, for @effect/cli only: a parser that
 * says why it is missing.
 */
const withoutCliFileParsers = {
  name: "without-cli-file-parsers",
  setup(build) {
    build.onResolve({ filter: /^(yaml|toml|ini)$/ }, (args) =>
      args.importer.includes(`${path.sep}@effect${path.sep}cli${path.sep}`) ? { path: args.path, namespace: "omitted" } : undefined)
    build.onLoad({ filter: /.*/, namespace: "omitted" }, (args) => ({
      loader: "js",
      contents: `export const parse = () => { throw new Error("${args.path} files are not supported by codex-harness (left out of the bundle by scripts/bundle.mjs)") }`
    }))
  }
}

/**
 * `import { X } from "@effect/platform-node"` loads the package's index, and with it undici (500 KB of CommonJS, run at
 * load) that nothing here uses; `import * as X from "@effect/platform-node/X"` loads X alone. Says which files still
 * import the index while undici is in the bundle.
 */
const warnAboutPlatformBarrel = (metafile) => {
  const barrel = Object.keys(metafile.inputs).find((file) => file.endsWith("@effect/platform-node/dist/esm/index.js"))
  const undici = Object.keys(metafile.inputs).some((file) => file.includes("node_modules/undici/"))
  if (barrel === undefined || !undici) return
  const importers = Object.entries(metafile.inputs)
    .filter(([file, input]) => !file.includes("node_modules/") && input.imports.some((i) => i.path === barrel))
    .map(([file]) => file)
  console.warn(
    `bundle: warning: undici (about 500 KB, loaded by every command that starts the harness) is in the bundle because ` +
      `these import "@effect/platform-node" as a whole: ${importers.join(", ")}; import the module itself ` +
      `(import * as NodeStream from "@effect/platform-node/NodeStream")`
  )
}

/**
 * The Control UI's script is to stay under 300 KB minified (issue 31): it was 640 KB while @effect/rpc's client and
 * Effect's runtime were in it. Says which packages are in it when it is over.
 */
const warnAboutUiSize = (metafile) => {
  const [output] = Object.values(metafile.outputs)
  if (output === undefined || output.bytes <= 300 * 1024) return
  const packages = new Set(Object.keys(output.inputs).flatMap((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.slice(1) ?? []))
  console.warn(
    `bundle: warning: dist/bundle/control-ui.js is ${(output.bytes / 1024).toFixed(0)} KB, over its 300 KB; from node_modules: ` +
      `${[...packages].join(", ") || "nothing"} (the page speaks the control API through src/control/ControlWire.ts)`
  )
}

/** The --connect entry is to load nothing of Effect or the harness: says what came in when something did. */
const warnAboutConnectEntry = (metafile) => {
  const heavy = Object.keys(metafile.inputs).filter((file) => /node_modules\/(effect|@effect)\/|src\/(harness|turn|session|appserver\/(?!AppServerUrl))/.test(file))
  if (heavy.length === 0) return
  console.warn(`bundle: warning: dist/bundle/connect.cjs (run/chat --connect) loads ${heavy.length} modules of Effect or the harness, e.g. ${heavy.slice(0, 3).join(", ")}`)
}

/**
 * `npm test` builds again after `npm ci` has built (prepare), and a developer's test runs build every time: when no
 * input of any bundle has changed since the last build (dist/bundle/inputs.json: each input file's size and mtime,
 * and a hash of what else decides the output: this script, the bin, package.json, the lockfile, Node's version),
 * nothing is bundled again and the code caches runs have written stay. About 2 CPU-s and the `config schema` warm-up
 * a test run does not repeat. Any change, a missing output or an unreadable stamp builds everything.
 */
const stampFile = path.join(outdir, "inputs.json")
const outputs = ["cli.cjs", "hook-relay.cjs", "prelaunch.cjs", "connect.cjs", "control-ui.js", "control-ui.html", "help.json", "cli.code-cache"]
const buildKey = () => {
  const hash = createHash("sha256").update(process.version)
  for (const file of ["scripts/bundle.mjs", "bin/codex-harness.js", "package.json", "package-lock.json", "src/control/ui/index.html"]) {
    hash.update(`\0${file}\0`).update(fs.readFileSync(path.join(root, file)))
  }
  return hash.digest("hex")
}
const sameFile = ([file, size, mtimeMs]) => {
  const stat = fs.statSync(path.join(root, file), { throwIfNoEntry: false })
  return stat !== undefined && stat.size === size && stat.mtimeMs === mtimeMs
}
const upToDate = () => {
  try {
    const stamp = JSON.parse(fs.readFileSync(stampFile, "utf8"))
    return stamp.key === buildKey() && outputs.every((file) => fs.existsSync(path.join(outdir, file))) &&
      Array.isArray(stamp.inputs) && stamp.inputs.length > 0 && stamp.inputs.every(sameFile)
  } catch {
    return false
  }
}
if (upToDate()) {
  console.log("bundle: dist/bundle is up to date with its inputs (dist/bundle/inputs.json)")
  process.exit(0)
}

// start empty: no stale file (an old code cache, chunks of an earlier layout) is shipped
fs.rmSync(outdir, { recursive: true, force: true })

/**
 * The scripts the bin loads are CommonJS: the bin is, and requiring a script spares a process Node's ES module loader
 * (about 7 ms here, paid by every hook Codex starts and every cold `run`). Modules that find files next to themselves
 * (the package's bin, its package.json, @openai/codex) read import.meta.url, which a CommonJS script does not have: it
 * becomes the script's own URL, which is where those modules now are.
 */
const script = {
  ...common,
  format: "cjs",
  outExtension: { ".js": ".cjs" },
  define: { "import.meta.url": "__codexHarnessScriptUrl" },
  banner: { js: 'const __codexHarnessScriptUrl = require("node:url").pathToFileURL(__filename).href;' }
}

const [cli, hookRelay, prelaunch, connect, ui] = await Promise.all([
  esbuild.build({ ...script, entryPoints: { cli: "src/cli/main.ts" }, metafile: true, plugins: [withoutCliFileParsers] }),
  esbuild.build({ ...script, entryPoints: { "hook-relay": "src/cli/hookRelay.ts" }, metafile: true }),
  // a cold `run`'s early spawn of its app-server (src/cli/prelaunch.ts), which the bin runs before loading cli.cjs
  esbuild.build({ ...script, entryPoints: { prelaunch: "src/cli/prelaunch.ts" }, metafile: true }),
  // `run --connect` and `chat --connect` without the CLI (src/cli/remote/entry.ts): CommonJS, which the bin loads with
  // require; no Effect in it (a warning below says so if one comes in)
  esbuild.build({ ...common, format: "cjs", entryPoints: { connect: "src/cli/remote/entry.ts" }, outExtension: { ".js": ".cjs" }, metafile: true }),
  // One classic script (the page loads it with `defer`; its CSP allows no inline script), no source map: `serve`
  // serves this file alone. It speaks the control API through src/control/ControlWire.ts, not @effect/rpc's client:
  // with Effect's runtime in it the script was 640 KB (now under 30); a Node module reaching it would fail the build
  // (platform "browser" has no node: built-ins), and Effect reaching it again is a warning below.
  esbuild.build({
    absWorkingDir: root,
    outdir,
    bundle: true,
    platform: "browser",
    target: ["chrome111", "firefox113", "safari16.4"],
    format: "iife",
    minify: true,
    legalComments: "none",
    logLevel: "warning",
    metafile: true,
    entryPoints: { "control-ui": "src/control/ui/app.ts" }
  }).then((ui) => {
    fs.copyFileSync(path.join(root, "src", "control", "ui", "index.html"), path.join(outdir, "control-ui.html"))
    return ui
  })
])
warnAboutPlatformBarrel(cli.metafile)
warnAboutUiSize(ui.metafile)
warnAboutConnectEntry(connect.metafile)

// Every help page, rendered now from the command tree (tsc's output of the same sources, which `npm run build` has just
// written): bin/codex-harness.js prints `--help` from this file without loading the CLI, which took most of half a
// second. Written last, so it is never older than the bundle it describes; the bin ignores it when it is.
const { examples, helpTree } = await import(new URL("../dist/src/cli/commands/root.js", import.meta.url).href)
const { helpPages } = await import(new URL("../dist/src/cli/help.js", import.meta.url).href)
const { packageVersion } = await import(new URL("../dist/src/cli/version.js", import.meta.url).href)
const version = packageVersion()
fs.writeFileSync(path.join(outdir, "help.json"), JSON.stringify({ version, pages: helpPages(helpTree, version, examples) }))

// The code cache: the bin writes one when there is none, at the exit of the run that compiled the script, with every
// function that run compiled. `config schema` loads the CLI and the config's schemas without starting an app-server,
// so building needs nothing but Node. A later run that finds the cache rejected (another Node) writes a new one.
// It runs with the node flags of the bin's shebang, as the installed command does: V8 takes a cache only under the flags
// it was written with.
const binFile = path.join(root, "bin", "codex-harness.js")
const shebangFlags = (/^#!.*?\bnode\b(.*)$/.exec(fs.readFileSync(binFile, "utf8").split("\n")[0])?.[1] ?? "").trim().split(/\s+/).filter((a) => a !== "")
const warmUp = spawnSync(process.execPath, [...shebangFlags, binFile, "config", "schema"], {
  stdio: ["ignore", "ignore", "inherit"],
  timeout: 60_000
})
if (warmUp.status !== 0 || !fs.existsSync(path.join(outdir, "cli.code-cache"))) {
  console.warn(`bundle: warning: no code cache written (config schema: exit ${warmUp.status ?? warmUp.signal}); the CLI starts without one`)
}

// written last: a build that failed before here leaves no stamp, and the next one builds everything
const inputs = [...new Set([cli, hookRelay, prelaunch, connect, ui].flatMap((result) => Object.keys(result.metafile.inputs)))]
  .filter((file) => !file.includes(":"))
  .map((file) => {
    const stat = fs.statSync(path.join(root, file))
    return [file, stat.size, stat.mtimeMs]
  })
fs.writeFileSync(stampFile, JSON.stringify({ key: buildKey(), inputs }))
