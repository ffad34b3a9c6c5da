#!/usr/bin/env node
// The package's command: runs the compiled CLI (built by `npm run build`, which `npm ci` runs through `prepare`).
// `hook-relay` is started by Codex for every hook, so it skips the CLI framework: plain Node modules, fast start, and
// its own exit codes (2 = fail closed).
if (process.argv[2] === "hook-relay") {
  const { main } = await import("../dist/src/cli/hookRelay.js")
  process.exitCode = await main(process.argv.slice(3))
} else {
  await import("../dist/src/cli/main.js")
}
