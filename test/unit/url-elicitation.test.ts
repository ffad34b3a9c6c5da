// URL elicitations (S32): only plain http(s) URLs whose displayed text cannot hide anything are offered; every refusal
// says why in one line; an accepted URL comes back exactly as given.
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { limits, validateUrl } from "../../src/interaction/UrlElicitation.js"

const reasonOf = (url: string): string => {
  const result = validateUrl(url)
  if (Either.isRight(result)) throw new Error(`expected ${JSON.stringify(url)} to be refused`)
  return result.left
}

const goodUrl = fc
  .webUrl({ validSchemes: ["http", "https"], withQueryParameters: true, withFragments: true })
  .filter((u) => u.length <= limits.maxUrlLength)

const cp = (min: number, max: number) => fc.integer({ min, max }).map((n) => String.fromCodePoint(n))

// every format (Cf) character, listed once so a property can draw from all of them
const formatChars: ReadonlyArray<string> = (() => {
  const found: Array<string> = []
  for (let n = 0; n <= 0x10ffff; n++) {
    if (n >= 0xd800 && n <= 0xdfff) continue
    const c = String.fromCodePoint(n)
    if (/\p{Cf}/u.test(c)) found.push(c)
  }
  return found
})()

/** a character class that must be refused, with the word its reason uses */
const badChar: fc.Arbitrary<readonly [string, string, RegExp]> = fc.oneof(
  cp(0x00, 0x1f).map((c) => ["C0 control", c, /control character/] as const),
  fc.constant(["DEL", "\u007f", /control character/] as const),
  cp(0x80, 0x9f).map((c) => ["C1 control", c, /control character/] as const),
  cp(0x200b, 0x200d).map((c) => ["zero-width", c, /invisible character/] as const),
  cp(0x2060, 0x2064).map((c) => ["word joiner / invisible operator", c, /invisible character/] as const),
  fc.constant(["BOM", "\ufeff", /invisible character/] as const),
  fc
    .constantFrom("\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u061c")
    .map((c) => ["bidi control", c, /invisible character/] as const),
  fc.constant(["soft hyphen", "\u00ad", /invisible character/] as const),
  fc.constant(["Mongolian vowel separator", "\u180e", /invisible character/] as const),
  fc.constantFrom(...formatChars).map((c) => ["format (Cf)", c, /invisible character/] as const),
  fc
    .constantFrom(" ", "\u00a0", "\u1680", "\u2000", "\u2005", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000")
    .map((c) => ["whitespace", c, /whitespace/] as const)
)

describe("URL elicitation", () => {
  it("[S32] valid http and https URLs pass unchanged", () => {
    fc.assert(
      fc.property(goodUrl, (url) => {
        expect(validateUrl(url)).toEqual(Either.right(url))
      }),
      { numRuns: 500 }
    )
    for (const url of ["https://example.com", "HTTP://Example.com:8080/a/b?c=d#e", "https://münchen.de/", "http://[::1]/x", "https://a.b/p@q"]) {
      expect(validateUrl(url)).toEqual(Either.right(url))
    }
  })

  it("[S32] each control and invisible character class and any whitespace is refused wherever it appears", () => {
    fc.assert(
      fc.property(goodUrl, badChar, fc.nat(), (url, [, c, why], at) => {
        const i = at % (url.length + 1)
        expect(reasonOf(url.slice(0, i) + c + url.slice(i))).toMatch(why)
      }),
      { numRuns: 1000 }
    )
  })

  it("[S32] URLs longer than 2,048 characters are refused, at any length past the limit", () => {
    fc.assert(
      fc.property(goodUrl, fc.integer({ min: 1, max: 5000 }), (url, extra) => {
        const base = `${url.replace(/[?#].*$/, "").replace(/\/$/, "")}/`
        const long = base + "a".repeat(limits.maxUrlLength - base.length + extra)
        expect(long.length).toBeGreaterThan(limits.maxUrlLength)
        expect(reasonOf(long)).toMatch(/at most 2048/)
      }),
      { numRuns: 200 }
    )
    const exact = `https://example.com/${"a".repeat(limits.maxUrlLength - "https://example.com/".length)}`
    expect(validateUrl(exact)).toEqual(Either.right(exact))
    expect(reasonOf(`${exact}a`)).toBe("the URL is 2049 characters long; at most 2048 are allowed")
  })

  it("[S32] schemes other than http and https are refused", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9+.-]{0,10}$/).filter((s) => !/^https?$/i.test(s)),
        fc.constantFrom("//example.com/x", "alert(1)", "text/html,hi", "/etc/passwd"),
        (scheme, rest) => {
          expect(reasonOf(`${scheme}:${rest}`)).toMatch(/scheme/)
        }
      ),
      { numRuns: 300 }
    )
    expect(reasonOf("javascript:alert(1)")).toBe('the URL scheme "javascript" is not allowed; only http and https are')
    expect(reasonOf("example.com/path")).toMatch(/no scheme/)
    expect(reasonOf("https:example.com")).toMatch(/does not start with/)
  })

  it("[S32] credentials before the host are refused", () => {
    fc.assert(
      fc.property(
        goodUrl,
        fc.stringMatching(/^[a-zA-Z0-9._~%-]{0,12}$/),
        fc.option(fc.stringMatching(/^[a-zA-Z0-9._~%-]{0,12}$/), { nil: undefined }),
        (url, user, password) => {
          const withCredentials = url.replace(/^(https?:\/\/)/, `$1${user}${password === undefined ? "" : `:${password}`}@`)
          expect(reasonOf(withCredentials)).toMatch(/credentials|does not parse/)
        }
      ),
      { numRuns: 300 }
    )
    expect(reasonOf("https://good.example@evil.example/")).toBe("the URL contains credentials (user or password before the host)")
  })

  it("[S32] other refusals name their reason in one line", () => {
    expect(reasonOf("")).toBe("the URL is empty")
    expect(reasonOf("https://evil.example\\@good.example/")).toBe("the URL contains a backslash")
    expect(reasonOf("http://")).toMatch(/does not parse|no host/)
    expect(reasonOf("https://exa mple.com")).toBe("the URL contains whitespace (U+0020)")
    expect(reasonOf("https://example.com/\u202egnp.exe")).toBe("the URL contains an invisible character (U+202E)")
    expect(reasonOf("https://example.com/\u0000")).toBe("the URL contains a control character (U+0000)")
    expect(reasonOf("https://example.com/\ud800")).toBe("the URL contains an unpaired surrogate")
  })
})
