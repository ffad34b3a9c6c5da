// One throwaway PostgreSQL (./postgres.ts) for a vitest file: started in beforeAll, stopped in afterAll.
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { type Postgres, type PostgresOptions, startPostgres } from "./postgres.js"

/** The getter throws if called before beforeAll has run (e.g. at collection time). */
export const withPostgres = (options: PostgresOptions = {}): (() => Postgres) => {
  let scope: Scope.CloseableScope | undefined
  let pg: Postgres | undefined
  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    pg = await Effect.runPromise(startPostgres(options).pipe(Scope.extend(scope)))
  }, 180_000)
  afterAll(async () => {
    if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  }, 180_000)
  return () => {
    if (pg === undefined) throw new Error("withPostgres: the server is not started yet (use it inside a test or hook)")
    return pg
  }
}
