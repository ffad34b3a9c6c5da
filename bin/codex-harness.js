#!/usr/bin/env -S node --max-semi-space-size=2
// The package's command. It runs the bundled CLI (dist/bundle/, written by `npm run build`, which `npm ci` runs through
// `prepare`): one minified script compiled with V8's code cache, each subcommand's code run only when it runs, and
// `--help` printed from pages rendered at build time, so `--help` and a cold `run` start fast.
// `hook-relay` is started by Codex for every hook, so it is an entry of its own: plain Node modules, nothing else
// loaded, and its own exit codes (2 = fail closed). `run --connect` and `chat --connect` have one too (below).
//
// Where only tsc has run since the last bundle (a checkout after `npx tsc`: dist/src newer than dist/bundle, or no
// bundle yet), the tsc output runs instead, so a stale bundle is never what a test or a person runs. An installed
// package has both, with equal times (npm pack fixes them), and runs the bundle.
//
// A CommonJS script (bin/package.json says so), not an ES module: Node starts a CommonJS main without its ES module
// loader, about 7 ms sooner, and every command pays that, a `run --connect` on every turn.
"use strict"
const { readFileSync, statSync } = require("node:fs")
const path = require("node:path")
const { pathToFileURL } = require("node:url")

// The shebang's V8 flag caps the young generation's semi-spaces at 2 MB (V8 lets them grow to 16 MB): a turn's garbage
// is short-lived, and the room V8 grew for it was most of the difference between the harness's peak RSS over a 20-turn
// chat and the goal (about 115 MB without it, about 93 MB with it; bench/README.md, memory). A heap size can only be set
// as Node starts, hence the shebang (`env -S`), which is how the command runs when installed; `node bin/...` runs
// without it and gets a code cache of its own (below). Tools that start the bin with `node` read the flags from line 1.

const dist = path.join(__dirname, "..", "dist")
const distPath = (file) => path.join(dist, file)
/** an ES module of dist/ (the tsc output), for import() */
const distUrl = (file) => pathToFileURL(distPath(file)).href
/** a file of dist/: a bundled script (.cjs) is required, the tsc output (ES modules) imported */
const load = (file) => (file.endsWith(".cjs") ? require(distPath(file)) : import(distUrl(file)))
const modified = (file) => statSync(distPath(file), { throwIfNoEntry: false })?.mtimeMs ?? -1
const pick = (bundled, compiled) => (modified(bundled) >= modified(compiled) ? bundled : compiled)

/**
 * `--help` (and `--version`) from the pages the build rendered (dist/bundle/help.json), without loading the CLI: only when they are at
 * least as new as the code that would otherwise run, so they always describe it.
 */
const printedHelp = async (entry) => {
  const args = process.argv.slice(2)
  const version = args.length === 1 && args[0] === "--version"
  if (!version && !args.includes("--help") && !args.includes("-h")) return false
  if (modified("bundle/help.json") < modified(entry) || modified("src/cli/helpRequest.js") < 0) return false
  const rendered = JSON.parse(readFileSync(distPath("bundle/help.json"), "utf8"))
  if (version) {
    process.stdout.write(`${rendered.version}\n`)
    return true
  }
  const { requestedPage, unknownCommandLine } = await import(distUrl("src/cli/helpRequest.js"))
  const request = requestedPage(args, rendered.pages)
  if (request === undefined) return false
  if (request._tag === "Page") process.stdout.write(request.text)
  else {
    process.stderr.write(`${unknownCommandLine("codex-harness", request)}\n`)
    process.exitCode = 2
  }
  return true
}

/**
 * `run --connect` and `chat --connect` (before any `--`): a process per turn through a warm serve, so its start-up is
 * every turn's. Their own entry (dist/bundle/connect.cjs: the control API over Node's http, the event printer) runs them
 * without loading the CLI; a command line it does not take for sure, it gives back (undefined) to the CLI.
 */
const connects = (args) => {
  if (args[0] !== "run" && args[0] !== "chat") return false
  const end = args.indexOf("--")
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === "--connect" || a.startsWith("--connect="))
}

const ranConnected = async () => {
  const entry = pick("bundle/connect.cjs", "src/cli/remote/entry.js")
  const { main } = await load(entry)
  const code = await main(process.argv.slice(2))
  if (code === undefined) return false
  process.exitCode = code
  return true
}

const main = async () => {
  if (process.argv[2] === "hook-relay") {
    const { main } = await load(pick("bundle/hook-relay.cjs", "src/cli/hookRelay.js"))
    process.exitCode = await main(process.argv.slice(3))
    return
  }
  const entry = pick("bundle/cli.cjs", "src/cli/main.js")
  if (!(await printedHelp(entry)) && !(connects(process.argv.slice(2)) && (await ranConnected()))) {
    if (process.argv[2] === "run" && process.env.CODEX_HARNESS_PRELAUNCH !== "0") await prelaunch()
    await start(entry)
  }
}

// a failure here is one the CLI could not print itself: Node prints it and exits 1, as for any unhandled rejection
void main()

/**
 * A cold `run` spends about half a second loading the CLI before it would spawn its app-server: the app-server a new
 * session of this command line would get is spawned now instead, and the CLI's transport adopts it if it is exactly
 * the one it wants (src/cli/prelaunch.ts). CODEX_HARNESS_PRELAUNCH=0 turns it off (to measure without it).
 */
async function prelaunch() {
  try {
    const { prelaunch } = await load(pick("bundle/prelaunch.cjs", "src/cli/prelaunch.js"))
    prelaunch(process.argv.slice(3))
  } catch {
    // an optimisation: without it the CLI spawns its own
  }
}

async function start(entry) {
  try {
    if (entry === "bundle/cli.cjs") await runScript(distPath(entry))
    else await import(distUrl(entry))
  } catch (error) {
    // the CLI prints its own failures as one line; this is one it could not: the bundle did not even load, and its
    // stack names minified chunks unless Node reads the source maps (off by default: they slow every start)
    if (entry.startsWith("bundle/") && !process.sourceMapsEnabled) {
      process.stderr.write("codex-harness: failed to load; NODE_OPTIONS=--enable-source-maps shows where in src/\n")
    }
    throw error
  }
}

/**
 * Runs the bundled CLI, a CommonJS script, compiled with V8's code cache next to it (cli.code-cache): loading the CLI
 * then takes a quarter of the time. A cache V8 rejects (written by another Node version) or a missing one only costs
 * that time; this run then writes a new one at its exit, with every function it compiled, if the bundle's directory
 * is this user's alone (a cache is code: it is never read from or written to a place others can change).
 */
async function runScript(file) {
  const { createRequire } = require("node:module")
  const requireFromBundle = createRequire(file)
  // Node reads source maps only for what it loads itself
  if (process.sourceMapsEnabled) return void requireFromBundle(file)
  const fs = require("node:fs")
  const vm = require("node:vm")
  const dir = path.dirname(file)
  // V8 rejects a cache written under other flags: one cache per set of flags, the shebang's being the one the build writes
  const flags = v8Flags(process.execArgv)
  const cacheFile = path.join(dir, flags === shebangFlags() ? "cli.code-cache" : `cli.code-cache-${require("node:crypto").createHash("sha256").update(flags).digest("hex").slice(0, 8)}`)
  const owned = (stat) => stat !== undefined && stat.uid === process.getuid?.() && (stat.mode & 0o022) === 0
  const trusted = owned(fs.statSync(dir, { throwIfNoEntry: false }))
  const cacheStat = trusted ? fs.statSync(cacheFile, { throwIfNoEntry: false }) : undefined
  const cachedData = owned(cacheStat) ? fs.readFileSync(cacheFile) : undefined
  const source = fs.readFileSync(file, "utf8").replace(/^#!.*/, "")
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: file,
    cachedData
  })
  // The build's cache holds what `config schema` compiled; the first turn after it (`run` or `chat`) writes it again with
  // the turn's code too, once (the marker beside it says so), which took about 50 ms off each later cold `run` here.
  const turnMarker = path.join(dir, path.basename(cacheFile).replace("code-cache", "turn-cached"))
  const turnCommand = process.argv[2] === "run" || process.argv[2] === "chat"
  const foldTurn = turnCommand && cachedData !== undefined && !script.cachedDataRejected &&
    fs.statSync(turnMarker, { throwIfNoEntry: false }) === undefined
  if (trusted && (cachedData === undefined || script.cachedDataRejected || foldTurn)) {
    process.once("exit", () => {
      try {
        const temporary = `${cacheFile}.${process.pid}`
        fs.writeFileSync(temporary, script.createCachedData(), { mode: 0o644 })
        fs.renameSync(temporary, cacheFile)
        if (turnCommand) fs.writeFileSync(turnMarker, "", { mode: 0o644 })
      } catch {
        // a cache is an optimisation: without it the next start compiles again
      }
    })
  }
  const module = { exports: {} }
  script.runInThisContext()(module.exports, requireFromBundle, module, file, dir)
}

/** the node flags of this file's shebang (line 1), as one string */
function shebangFlags() {
  return v8Flags(/^#!.*?\bnode\b(.*)$/m.exec(readHead())?.[1]?.trim().split(/\s+/).filter((a) => a !== "") ?? [])
}

function readHead() {
  return readFileSync(__filename, "utf8").slice(0, 200).split("\n")[0]
}

/** node's options that change how V8 compiles (what a code cache depends on): every one but the preloads */
function v8Flags(argv) {
  const kept = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === "--require" || a === "-r" || a === "--import") i++
    else if (!a.startsWith("--require=") && !a.startsWith("--import=")) kept.push(a)
  }
  return kept.join(" ")
}
