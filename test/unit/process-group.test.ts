// The app-server's process group after its exit: a zombie waiting for a late reaper is not a running member, so the
// teardown does not wait for PID 1 to reap it (seen: 0.5 s per `run` in a VM whose init reaps late).
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { groupAlive, liveMembers, signalGroup } from "../../src/appserver/ProcessGroup.js"

const stateOf = (pid: number) => {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, "latin1")
    return text.slice(text.lastIndexOf(")") + 2).split(" ")[0]
  } catch {
    return undefined
  }
}

/** polls a condition, bounded: a receipt from /proc, not a sleep of a guessed length */
const until = async (what: string, check: () => boolean) => {
  for (let i = 0; i < 500; i++) {
    if (check()) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe.runIf(fs.existsSync("/proc/self/stat"))("ProcessGroup", () => {
  it("a zombie in the group is not a live member; the group is gone once its running members are", async () => {
    // sh starts a subshell in the background and execs sleep, which never waits: the subshell ends once its parent
    // is sleep (never before, so sh cannot reap it first) and stays a zombie child of sleep, in the same process group
    const child = spawn(
      "sh",
      ["-c", `(while [ "$(cat /proc/$$/comm)" != sleep ]; do sleep 0.01; done) & echo $!; exec sleep 100`],
      { detached: true, stdio: ["ignore", "pipe", "ignore"] }
    )
    const pgid = child.pid!
    try {
      const zombie = await new Promise<number>((resolve) => child.stdout.once("data", (d: Buffer) => resolve(Number(d.toString().trim()))))
      await until("the background child to become a zombie", () => stateOf(zombie) === "Z")
      await until("sh to exec sleep", () => fs.readFileSync(`/proc/${pgid}/comm`, "utf8").trim() === "sleep")

      expect(liveMembers(pgid)).toEqual([pgid])
      expect(groupAlive(pgid)).toBe(true)

      const exited = new Promise((resolve) => child.once("exit", resolve))
      signalGroup(pgid, "SIGKILL")
      await exited
      expect(liveMembers(pgid)).toEqual([])
      expect(groupAlive(pgid)).toBe(false)
    } finally {
      signalGroup(pgid, "SIGKILL")
    }
  })

  it("a group nobody is in is not alive, and signalling it does not throw", () => {
    // pid 2^22 + 1 is above Linux's pid_max ceiling: no group can have it
    const unused = 4_194_305
    expect(groupAlive(unused)).toBe(false)
    expect(() => signalGroup(unused, "SIGKILL")).not.toThrow()
    expect(groupAlive(undefined)).toBe(false)
  })
})
