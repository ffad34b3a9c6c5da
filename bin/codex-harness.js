#!/usr/bin/env node
// The package's command. It runs the bundled CLI (dist/bundle/, written by `npm run build`, which `npm ci` runs through
// `prepare`): minified, each subcommand's code loaded only when it runs, so `--help` and a cold `run` start fast.
// `hook-relay` is started by Codex for every hook, so it is an entry of its own: plain Node modules, nothing else
// loaded, and its own exit codes (2 = fail closed).
//
// Where only tsc has run since the last bundle (a checkout after `npx tsc`: dist/src newer than dist/bundle, or no
// bundle yet), the tsc output runs instead, so a stale bundle is never what a test or a person runs. An installed
// package has both, with equal times (npm pack fixes them), and runs the bundle.
import { statSync } from "node:fs"

const dist = new URL("../dist/", import.meta.url)
const modified = (file) => statSync(new URL(file, dist), { throwIfNoEntry: false })?.mtimeMs ?? -1
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
  const { readFileSync } = await import("node:fs")
  const rendered = JSON.parse(readFileSync(new URL("bundle/help.json", dist), "utf8"))
  if (version) {
    process.stdout.write(`${rendered.version}\n`)
    return true
  }
  const { requestedPage, unknownCommandLine } = await import(new URL("src/cli/helpRequest.js", dist).href)
  const request = requestedPage(args, rendered.pages)
  if (request === undefined) return false
  if (request._tag === "Page") process.stdout.write(request.text)
  else {
    process.stderr.write(`${unknownCommandLine("codex-harness", request)}\n`)
    process.exitCode = 2
  }
  return true
}

if (process.argv[2] === "hook-relay") {
  const { main } = await import(new URL(pick("bundle/hook-relay.js", "src/cli/hookRelay.js"), dist).href)
  process.exitCode = await main(process.argv.slice(3))
} else {
  const entry = pick("bundle/main.js", "src/cli/main.js")
  if (!(await printedHelp(entry))) await start(entry)
}

async function start(entry) {
  try {
    await import(new URL(entry, dist).href)
  } catch (error) {
    // the CLI prints its own failures as one line; this is one it could not: the bundle did not even load, and its
    // stack names minified chunks unless Node reads the source maps (off by default: they slow every start)
    if (entry.startsWith("bundle/") && !process.sourceMapsEnabled) {
      process.stderr.write("codex-harness: failed to load; NODE_OPTIONS=--enable-source-maps shows where in src/\n")
    }
    throw error
  }
}
