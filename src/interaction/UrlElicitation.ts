// URL elicitations (S32): the URL is shown to the person as literal text next to Continue and Decline. It is never
// fetched or opened here, so the only defence is to refuse URLs whose displayed text could mislead: hidden characters,
// credentials that disguise the real host, schemes other than http(s). Pure.
import { Either } from "effect"

export const limits = {
  /** longest URL accepted, in UTF-16 code units (the length a browser address bar works with) */
  maxUrlLength: 2048
} as const

const codePoint = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`

// C0, DEL and C1 controls.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u
// Characters that render as nothing (or reorder what is shown): zero-width, word joiners, BOM, bidi controls, Arabic
// letter mark, soft hyphen, Mongolian vowel separator, every other format (Cf) character, and a few blank letters and
// selectors outside Cf (combining grapheme joiner, Hangul fillers, Khmer inherent vowels, variation selectors).
const INVISIBLE =
  /[\u200b-\u200f\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069\u061c\u00ad\u180e\p{Cf}\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\uffa0\ufe00-\ufe0f\u{e0100}-\u{e01ef}]/u
const WHITESPACE = /[\s\p{White_Space}\u2800]/u
const LONE_SURROGATE = /\p{Cs}/u

const found = (re: RegExp, url: string): string | undefined => re.exec(url)?.[0]

/** Right: the URL exactly as given. Left: a one-line reason. Never fetches or opens the URL. */
export const validateUrl = (url: string): Either.Either<string, string> => {
  if (url.length === 0) return Either.left("the URL is empty")
  if (url.length > limits.maxUrlLength) {
    return Either.left(`the URL is ${url.length} characters long; at most ${limits.maxUrlLength} are allowed`)
  }
  // A string from JSON may hold lone surrogates (with the `u` flag, \p{Cs} matches only unpaired ones).
  if (LONE_SURROGATE.test(url)) return Either.left("the URL contains an unpaired surrogate")
  const control = found(CONTROL, url)
  if (control !== undefined) return Either.left(`the URL contains a control character (${codePoint(control)})`)
  const invisible = found(INVISIBLE, url)
  if (invisible !== undefined) return Either.left(`the URL contains an invisible character (${codePoint(invisible)})`)
  const space = found(WHITESPACE, url)
  if (space !== undefined) return Either.left(`the URL contains whitespace (${codePoint(space)})`)
  // WHATWG parsing turns `\` into `/` for http(s), so the host the text suggests may not be the host it names.
  if (url.includes("\\")) return Either.left("the URL contains a backslash")
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url)?.[1]
  if (scheme === undefined) return Either.left("the URL has no scheme; only http and https are allowed")
  if (!/^https?$/i.test(scheme)) return Either.left(`the URL scheme "${scheme.toLowerCase()}" is not allowed; only http and https are`)
  // The lenient parser would accept `https:host`; require the authority form that is displayed unambiguously.
  if (!/^https?:\/\//i.test(url)) return Either.left("the URL does not start with http:// or https://")
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return Either.left("the URL does not parse")
  }
  if (parsed.username !== "" || parsed.password !== "" || /^https?:\/\/[^/?#]*@/i.test(url)) {
    return Either.left("the URL contains credentials (user or password before the host)")
  }
  if (parsed.hostname === "") return Either.left("the URL has no host")
  return Either.right(url)
}
