// `doctor`'s directory checks: the state dir (session files, the config) and the CODEX_HOME a new session's app-server
// gets must exist or be creatable, be directories, and take a file: a probe is created and deleted in each. The state
// dir must also be this user's alone (the same rule every command applies before it reads the config there).
import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import * as crypto from "node:crypto"
import * as path from "node:path"
import { ensureDir } from "../../platform/ensureDir.js"
import { describeFileError } from "../../platform/fileErrors.js"
import { checkPrivate } from "../../platform/trust.js"
import { type CheckFailed, failed, type Passed, passedWith } from "./check.js"

/**
 * Creates the directory as the harness would (0700, with its parents), then writes and deletes a probe file in it. The
 * probe is deleted by a finalizer, so a check cut short by its time bound leaves nothing either.
 */
export const writable = (
  what: string,
  dir: string,
  options: { readonly private?: boolean } = {}
): Effect.Effect<Passed<void>, CheckFailed, FileSystem.FileSystem> =>
  Effect.scoped(Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    yield* ensureDir(dir).pipe(
      Effect.mapError((e) => failed(e._tag === "NotADirectory" ? e.message : `cannot create ${dir}: ${describeFileError(e)}`))
    )
    if (options.private === true) yield* checkPrivate(what, dir).pipe(Effect.mapError((e) => failed(e.message)))
    const probe = path.join(dir, `.codex-harness-doctor-${process.pid}-${crypto.randomBytes(4).toString("hex")}`)
    yield* Effect.acquireRelease(
      fs.writeFileString(probe, "probe\n", { flag: "wx", mode: 0o600 }),
      () => fs.remove(probe).pipe(Effect.ignore)
    ).pipe(Effect.mapError((e) => failed(`cannot write in ${dir}: ${describeFileError(e)}`)))
    // the probe's removal is part of the check: a directory where files can be made but not deleted is not usable
    yield* fs.remove(probe).pipe(Effect.mapError((e) => failed(`cannot delete a file in ${dir}: ${describeFileError(e)}`)))
    return passedWith(`${what} ${dir} is writable`, undefined)
  }))
