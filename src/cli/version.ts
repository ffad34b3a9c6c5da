// The package's version for `--version`, read from its package.json. Found by walking up from this module, because the
// module runs from two places: the tsc output (dist/src/cli/) and the bundle (dist/bundle/), at different depths.
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export const packageVersion = (): string => {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    try {
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: unknown; version?: unknown }
      if (manifest.name === "codex-harness" && typeof manifest.version === "string") return manifest.version
    } catch {
      // no package.json here (or not ours): one level up
    }
    dir = path.dirname(dir)
  }
  return "unknown"
}
