// Creates a directory and its missing parents, one level at a time. Node 20's `mkdir({ recursive: true })` spins
// forever on some paths (under /proc, for one), which would hang the CLI instead of reporting a bad --state-dir.
import * as fs from "node:fs"
import * as path from "node:path"

export const ensureDirSync = (dir: string, mode = 0o700): void => {
  const missing: Array<string> = []
  let current = path.resolve(dir)
  for (;;) {
    try {
      if (!fs.statSync(current).isDirectory()) {
        throw Object.assign(new Error(`not a directory: ${current}`), { code: "ENOTDIR" })
      }
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error
      missing.push(current)
      const parent = path.dirname(current)
      if (parent === current) break
      current = parent
    }
  }
  for (const d of missing.reverse()) {
    try {
      fs.mkdirSync(d, { mode })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
    }
  }
}
