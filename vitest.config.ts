import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["dist/**", "node_modules/**"],
    // Integration tests spawn the real app-server; two cores, so keep files from starving each other.
    maxWorkers: 2,
    minWorkers: 1,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    env: {
      // Codex snapshots the user's shell (an interactive bash reading ~/.bashrc) for every app-server a test starts. On a
      // machine whose ~/.bashrc runs `pyenv init`, each snapshot starts a `pyenv rehash` that waits up to 60 s for
      // pyenv's lock while other tests' snapshots hold it, and outlives its app-server: a leftover no test started.
      // One second bounds that wait; without pyenv the variable means nothing.
      PYENV_REHASH_TIMEOUT: "1"
    }
  }
})
