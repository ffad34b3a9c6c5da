import * as fs from "node:fs"
import * as path from "node:path"
import { defineConfig } from "vitest/config"
import { LongestFirst } from "./test/support/sequencer.js"

// A home of the suite's own: the app-servers' shells (Codex snapshots the user's login shell) and everything else a
// test starts read no dotfiles of the machine's user. A ~/.bashrc that runs `pyenv init` printed pyenv's rehash
// complaints into a command's output under load, and the user's ~/.codex is none of a test's business.
const home = path.resolve("test-artifacts", "home")
fs.mkdirSync(home, { recursive: true, mode: 0o700 })

// `node dist/scripts/file-cpu.js` measures each file's CPU time: one file at a time, with a setup file that reads /proc/stat
const fileCpu = process.env["CODEX_HARNESS_FILE_CPU"] !== undefined

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["dist/**", "node_modules/**"],
    // Integration tests spawn the real app-server and mostly wait on it: five files at a time on two cores. Beside two busy
    // loops of the same shell (`yes > /dev/null &` twice, then `npm test`: the loops share the suite's scheduling group,
    // where the CPU is shared per runnable thread) a run is bound by the suite's share of the CPU, and more files at once
    // are a larger share: `npm test` 678 s with three workers, 593 s with five, 586 and 670 s with six (2026-12-07). Each
    // worker loads the modules its files import (collect: 61 s of the workers' time with three, 141-180 s with six), so
    // more is not free: five (then 602 s as root, and vitest 596 s as an unprivileged user, 927/0 each).
    // Files share their worker's modules (`isolate: false`): each file loaded Effect and the harness afresh, 490-540 s
    // of the workers' time in a run (62 s shared; unit and service tests alone 151 s -> 57 s). Vitest 3.2's pool ended
    // such a run with "Terminating worker thread" when it stopped a worker above `minWorkers` at the end (vitest#8564),
    // so the workers are kept (minWorkers = maxWorkers). No test file sets a global another reads: state a file makes
    // lives in its own scope.
    maxWorkers: fileCpu ? 1 : 5,
    minWorkers: fileCpu ? 1 : 5,
    ...(fileCpu ? { setupFiles: ["test/support/fileCpu.ts"] } : {}),
    isolate: false,
    // the longest files start first, from durations checked in with the tests (test/support/sequencer.ts)
    sequence: { sequencer: LongestFirst },
    // generous: CI runs on a developer's machine, often loaded (two busy loops beside the suite are part of its checks);
    // a test waits on receipts, and these bounds only end one that would otherwise hang
    testTimeout: 180_000,
    hookTimeout: 180_000,
    env: {
      // Codex snapshots the user's shell (an interactive bash reading ~/.bashrc) for every app-server a test starts. On a
      // machine whose ~/.bashrc runs `pyenv init`, each snapshot starts a `pyenv rehash` that waits up to 60 s for
      // pyenv's lock while other tests' snapshots hold it, and outlives its app-server: a leftover no test started.
      // One second bounds that wait; without pyenv the variable means nothing.
      PYENV_REHASH_TIMEOUT: "1",
      HOME: home,
      // `codex -c` overrides for every app-server (README: Config file), each for CPU on a machine the suite keeps busy,
      // over 300 app-servers a run. Codex's login-shell snapshot at every thread start costs about 0.14 CPU-s per
      // app-server here (a login bash and a dozen short processes) and the tests' HOME has no profile for it to
      // capture; provider-key.test.ts runs with it on. Plugins: each app-server's sync of the curated plugins from
      // GitHub, which fails offline after trying git and HTTPS, costs about as much; apps.test.ts, whose connected apps
      // are plugins, runs with them on.
      CODEX_HARNESS_APP_SERVER_CONFIG: "features.shell_snapshot=false\nfeatures.plugins=false",
      // a stand-in for Debian's lsb_release, which Codex runs twice per app-server (test/support/bin/lsb_release says why)
      PATH: `${path.resolve("test", "support", "bin")}${path.delimiter}${process.env["PATH"] ?? ""}`
    }
  }
})
