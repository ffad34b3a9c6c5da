// What the tests cache between runs, per user (npm's Chromium unpacked, a PostgreSQL data directory fresh from
// initdb): ~/.cache/codex-harness-tests, or $TMPDIR/codex-harness-tests-UID when the home directory cannot be written.
// What is cached there is run (a browser) or started from (a database's files), so it is never read from a place
// others can change: the directory is created 0700 and refused when it is not this user's alone.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** this user's directory for what the tests cache: created when missing, refused when it is not this user's alone */
export const testCacheDir = (): string => {
  const uid = process.getuid?.() ?? 0
  const home = os.homedir()
  const base = process.env["XDG_CACHE_HOME"] || (home !== "" ? path.join(home, ".cache") : "")
  if (base !== "") {
    try {
      const dir = path.join(base, "codex-harness-tests")
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
      fs.accessSync(dir, fs.constants.W_OK)
      return dir
    } catch {
      // a home that cannot be written (nobody's /nonexistent): the temp dir
    }
  }
  const dir = path.join(os.tmpdir(), `codex-harness-tests-${uid}`)
  try {
    fs.mkdirSync(dir, { mode: 0o700 })
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
  }
  const st = fs.lstatSync(dir)
  if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) {
    throw new Error(`${dir} is not a directory of this user's alone (uid ${uid}, mode 0700): remove it, or set XDG_CACHE_HOME`)
  }
  return dir
}
