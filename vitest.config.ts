import * as fs from "node:fs"
import * as path from "node:path"
import { defineConfig } from "vitest/config"

// A home of the suite's own: the app-servers' shells (Codex snapshots the user's login shell) and everything else a
// test starts read no dotfiles of the machine's user. A ~/.bashrc that runs `pyenv init` printed pyenv's rehash
// complaints into a command's output under load, and the user's ~/.codex is none of a test's business.
const home = path.resolve("test-artifacts", "home")
fs.mkdirSync(home, { recursive: true, mode: 0o700 })

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["dist/**", "node_modules/**"],
    // Integration tests spawn the real app-server and mostly wait on it: three files at a time on two cores (with two
    // busy loops beside the suite: 1,083 s with two workers, 609 s with three and modules shared between files).
    // Each file keeps its own module graph (isolate, the default): with `isolate: false` unit and service tests took
    // 52 s instead of 205 s, but Vitest 3.2's pool once ended a whole run with "Terminating worker thread" while a file
    // was still running (a known Vitest issue with shared workers).
    maxWorkers: 3,
    minWorkers: 1,
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
      HOME: home
    }
  }
})
