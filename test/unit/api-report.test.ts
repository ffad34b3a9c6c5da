// The checked-in API report (etc/codex-harness.api.md, written by api-extractor from the built declarations; `npm test`
// fails when the public surface differs from it, `npm run api:update` rewrites it) names only public types: a type a
// public signature uses but no public module exports is reported by api-extractor as a "forgotten export". The only
// ones allowed are the `X_base` constants TypeScript declares for `class X extends Schema.TaggedError<X>()(...)`: an
// app never names them, and they carry no name of ours.
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const report = fs.readFileSync(path.resolve(import.meta.dirname, "../../etc/codex-harness.api.md"), "utf8")

describe("the API report", () => {
  it("every type a public signature names is exported by a public module", () => {
    const forgotten = [...report.matchAll(/\(ae-forgotten-export\) The symbol "([^"]+)"/g)].map((m) => m[1]!)
    expect(forgotten.length).toBeGreaterThan(0)
    expect(forgotten.filter((name) => !name.endsWith("_base"))).toEqual([])
  })

  it("covers every entry of the package: the index, the testing kit and both layers", () => {
    for (const name of ["Harness", "Delivery", "Errors", "Live", "Test", "Testing"]) {
      expect(report).toMatch(new RegExp(`^declare namespace ${name} \\{`, "m"))
    }
  })
})
