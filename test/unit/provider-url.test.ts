// A --provider-url with a credential in it (userinfo, or a query parameter that carries a key) is refused with one line
// that says where the key goes instead, and never repeats the secret.
import { describe, expect, it } from "@effect/vitest"
import { checkProviderUrl, redactUrl } from "../../src/appserver/CodexArgs.js"

describe("provider URL credentials", () => {
  it("a plain http(s) URL is accepted, query parameters that are not credentials included", () => {
    expect(checkProviderUrl("http://127.0.0.1:8080/v1")).toBeUndefined()
    expect(checkProviderUrl("https://example.com/openai/v1?api-version=2025-01-01")).toBeUndefined()
    expect(checkProviderUrl("https://example.com/v1?monkey=1&tokens=5")).toBeUndefined()
  })

  it("userinfo is refused, the secret replaced by ***, and the way out named", () => {
    const reason = checkProviderUrl("http://user:s3cr3t-value@host.example:8080/v1")!
    expect(reason).toBe(
      "http://***@host.example:8080/v1 carries a credential (a user name or password); leave it out of the URL and put " +
        "the key in the environment instead ($OPENAI_API_KEY, or the variable --provider-key-env names)"
    )
    expect(checkProviderUrl("https://only-a-user@host/v1")).toContain("https://***@host/v1 carries a credential")
  })

  it("a credential-like query parameter is refused whatever its case, and only its value is hidden", () => {
    for (const name of ["key", "api_key", "apikey", "token", "access_token", "secret", "password", "API_KEY", "Api-Key", "Token"]) {
      const reason = checkProviderUrl(`https://host/v1?model=m&${name}=s3cr3t-value`)
      expect(reason, name).toBe(
        `https://host/v1?model=m&${name}=*** carries a credential (a ${name} parameter); leave it out of the URL and put ` +
          "the key in the environment instead ($OPENAI_API_KEY, or the variable --provider-key-env names)"
      )
    }
  })

  it("no message ever repeats the secret, and each is one line", () => {
    const urls = [
      "http://u:s3cr3t-value@h/v1",
      "http://h/v1?KEY=s3cr3t-value",
      "ftp://u:s3cr3t-value@h/v1",
      "u:s3cr3t-value@h",
      "not a url ?token=s3cr3t-value",
      "http://u:s3cr3t-value@[bad"
    ]
    for (const url of urls) {
      const reason = checkProviderUrl(url)
      expect(reason, url).toBeDefined()
      expect(reason, url).not.toContain("s3cr3t")
      expect(reason, url).not.toContain("\n")
    }
    expect(redactUrl("http://h/v1?a=1&token=t0k&b=2#frag")).toBe("http://h/v1?a=1&token=***&b=2#frag")
  })
})
