// The suite's lsb_release (test/support/bin, first on the suite's PATH: vitest.config.ts) stands in for the machine's
// when Codex names the OS: it must print what the machine's prints for `-a`, or Codex would describe another machine.
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const standIn = path.resolve("test", "support", "bin", "lsb_release")
const machines = ["/usr/bin/lsb_release", "/bin/lsb_release"].find((file) => fs.existsSync(file))

describe("the suite's lsb_release stand-in", () => {
  it("is first on the suite's PATH and prints the four lines of `lsb_release -a`, from /etc/os-release", () => {
    expect(process.env["PATH"]?.split(path.delimiter)[0]).toBe(path.dirname(standIn))
    const printed = execFileSync(standIn, ["-a"], { encoding: "utf8" })
    expect(printed.split("\n").slice(0, 4).map((line) => line.split(":\t")[0])).toEqual(["Distributor ID", "Description", "Release", "Codename"])
    // where the machine has its own, each of those four lines as it prints it (some print more lines, e.g. "LSB
    // Version" on Fedora, and a note on stderr)
    if (machines !== undefined) {
      const own = execFileSync(machines, ["-a"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).split("\n")
      for (const line of printed.split("\n").filter((l) => l !== "")) {
        expect(own.find((l) => l.startsWith(`${line.split(":\t")[0]}:`))).toBe(line)
      }
    }
  })
})
