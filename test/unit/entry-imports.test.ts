// What an app loads when it imports the package: the entries (the index and its subpath modules, the testing kit, the
// layers) and everything they import statically reach only Node's modules, the Effect peers and the package's own
// dependencies. The CLI's, serve's and the cluster's packages (@effect/cli, @effect/cluster, @effect/sql-pg,
// @effect/opentelemetry, ...) are dev dependencies bundled into the command line: an entry that reached one would fail
// in an app that does not have it.
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "../..")
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"))
const allowed = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)])

const entries = ["src/index.ts", "src/testing/index.ts", "layers/Live.ts", "layers/Test.ts"]

/** static imports and re-exports (not `import type`, which loads nothing), resolved relative to the file */
const importsOf = (file: string): ReadonlyArray<string> => {
  const text = fs.readFileSync(file, "utf8")
  return [...text.matchAll(/(?:^|\n)\s*(import|export)\s+(type\s+)?([^;]*?)\s*from\s+"([^"]+)"/g)]
    .filter((m) => m[2] === undefined)
    .map((m) => m[4]!)
}

const packageOf = (spec: string) => (spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!)

describe("what the package's entries load", () => {
  it("only Node's modules, the Effect peers and the package's dependencies", () => {
    const seen = new Set<string>()
    const packages = new Map<string, string>()
    const visit = (file: string) => {
      if (seen.has(file)) return
      seen.add(file)
      for (const spec of importsOf(file)) {
        if (spec.startsWith(".")) visit(path.resolve(path.dirname(file), spec.replace(/\.js$/, ".ts")))
        else if (!spec.startsWith("node:")) packages.set(packageOf(spec), path.relative(root, file))
      }
    }
    for (const entry of entries) visit(path.join(root, entry))
    expect(seen.size).toBeGreaterThan(100)
    const outside = [...packages].filter(([name]) => !allowed.has(name)).map(([name, file]) => `${name} (from ${file})`)
    expect(outside).toEqual([])
  })
})
