// `codex-harness cluster status`: read from PostgreSQL alone, so it works from any machine that reaches the database and
// while runners are dying. The password comes from $PGPASSWORD, never from argv.
import { Console, Effect } from "effect"
import * as ClusterStatus from "../cluster/ClusterStatus.js"
import type { StatusOptions } from "./commands/cluster.js"
import { UsageError } from "./errors.js"

/** `--cluster URL` with the password from $PGPASSWORD; a password on the command line is refused. Pure but for env. */
export const databaseUrl = (given: string): string | UsageError => {
  let url: URL
  try {
    url = new URL(given)
  } catch {
    return new UsageError({ line: "--cluster: expected postgres://USER@HOST:PORT/DB" })
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") return new UsageError({ line: "--cluster: expected postgres://USER@HOST:PORT/DB" })
  // libpq and pg read a password from the query too (`?password=`)
  if (url.password !== "" || [...url.searchParams.keys()].some((key) => key.toLowerCase() === "password")) {
    return new UsageError({ line: "--cluster: a password on the command line is refused (other users see it): put it in $PGPASSWORD" })
  }
  const password = process.env.PGPASSWORD
  if (password !== undefined && password !== "") url.password = encodeURIComponent(password)
  // read once and gone from this process's environment: every app-server (and so the agent's shell) inherits it
  delete process.env.PGPASSWORD
  return url.toString()
}

export const status = (options: StatusOptions) =>
  Effect.gen(function* () {
    const url = databaseUrl(options.cluster)
    if (typeof url !== "string") return yield* url
    const report = yield* ClusterStatus.run(url)
    yield* options.json ? Console.log(JSON.stringify(report)) : Console.log(ClusterStatus.format(report))
  })
