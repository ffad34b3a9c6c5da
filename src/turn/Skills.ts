// A skill catalog read from a directory (S9): every subdirectory holding a SKILL.md whose front matter names the skill
// and describes it. Only the catalog goes to the model (name, description, path); the model reads a SKILL.md itself
// when a task matches. Bounded in entries scanned and bytes read, so a huge or hostile directory costs little.
import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import * as path from "node:path"
import type { Skill } from "./Instructions.js"
import { readBounded } from "./Workspace.js"
import * as HarnessLog from "../platform/HarnessLog.js"

/** Subdirectories looked at; the catalog lists at most SKILL_CATALOG_MAX_ENTRIES of them anyway. */
export const SKILL_DIRS_MAX_SCANNED = 200
/** The front matter sits at the top of SKILL.md; this much is read of each. */
export const SKILL_HEADER_MAX_BYTES = 4 * 1024

const unquote = (value: string): string => {
  const v = value.trim()
  return (v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'")) ? v.slice(1, -1) : v
}

/**
 * `name` and `description` from a `---` front-matter block. Hand-written rather than a YAML library: only two
 * one-line scalar keys are read, and anything else in the block is ignored. Pure.
 */
export const frontMatter = (text: string): { readonly name?: string; readonly description?: string } => {
  const lines = text.split(/\r?\n/)
  if (lines[0]?.trim() !== "---") return {}
  const found: { name?: string; description?: string } = {}
  for (const line of lines.slice(1)) {
    if (line.trim() === "---") break
    const match = /^(name|description)\s*:\s*(.*)$/.exec(line)
    if (match !== null && match[1] !== undefined && match[2] !== undefined && unquote(match[2]) !== "") {
      found[match[1] as "name" | "description"] = unquote(match[2])
    }
  }
  return found
}

/** The skills of `dir`, sorted by name; a missing or unreadable directory has none. */
export const readSkills = (dir: string): Effect.Effect<ReadonlyArray<Skill>, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const entries = (yield* fs.readDirectory(dir)).filter((name) => !name.startsWith(".")).sort().slice(0, SKILL_DIRS_MAX_SCANNED)
    const skills = yield* Effect.forEach(entries, (entry) => {
      const file = path.join(dir, entry, "SKILL.md")
      // only directories hold skills; a stray file next to them is not worth a warning
      const isDir = fs.stat(path.join(dir, entry)).pipe(
        Effect.map((info) => info.type === "Directory"),
        Effect.orElseSucceed(() => false)
      )
      return Effect.flatMap(isDir, (dir) => (dir ? readBounded(file, SKILL_HEADER_MAX_BYTES) : Effect.succeed(undefined))).pipe(
        Effect.map((text) => {
          if (text === undefined) return undefined
          const { description, name } = frontMatter(text)
          return name !== undefined && description !== undefined ? { name, description, path: file } : undefined
        })
      )
    })
    return skills.filter((s): s is Skill => s !== undefined).sort((a, b) => a.name.localeCompare(b.name))
  }).pipe(
    Effect.catchAll((error) =>
      error._tag === "SystemError" && error.reason === "NotFound"
        ? Effect.succeed([])
        : HarnessLog.warning(`cannot read the skills directory ${dir}: ${error.message}`).pipe(Effect.as([]))
    )
  )
