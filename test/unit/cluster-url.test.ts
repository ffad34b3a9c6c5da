// `--cluster URL`: the password comes from $PGPASSWORD, never from the command line, where every user of the machine can
// read it; a URL carrying one (as userinfo or as libpq's `?password=`) is a usage error that does not echo it.
import { afterEach, describe, expect, it } from "vitest"
import { databaseUrl } from "../../src/cli/cluster.js"
import { UsageError } from "../../src/cli/errors.js"

const saved = process.env.PGPASSWORD
afterEach(() => {
  if (saved === undefined) delete process.env.PGPASSWORD
  else process.env.PGPASSWORD = saved
})

describe("databaseUrl", () => {
  it("refuses a password in the URL's userinfo or its query, without repeating it", () => {
    for (const given of ["postgres://ops:hunter2@db:5432/prod", "postgres://ops@db:5432/prod?password=hunter2", "postgresql://db/prod?sslmode=require&PASSWORD=hunter2"]) {
      const refused = databaseUrl(given)
      expect(refused, given).toBeInstanceOf(UsageError)
      expect((refused as UsageError).line).toContain("$PGPASSWORD")
      expect((refused as UsageError).line).not.toContain("hunter2")
    }
  })

  it("takes the password from $PGPASSWORD and then removes it from the environment the app-servers inherit", () => {
    process.env.PGPASSWORD = "from-env"
    expect(databaseUrl("postgres://ops@db:5432/prod?sslmode=require")).toBe("postgres://ops:from-env@db:5432/prod?sslmode=require")
    expect(process.env.PGPASSWORD).toBeUndefined()
  })

  it("refuses what is not a postgres URL", () => {
    expect(databaseUrl("http://db/prod")).toBeInstanceOf(UsageError)
    expect(databaseUrl("not a url")).toBeInstanceOf(UsageError)
  })
})
