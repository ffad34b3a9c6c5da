// Text from the model (and from what it runs) made safe to print at a terminal. A reply is data, but a terminal obeys
// what is in it: an escape sequence can clear the screen, retitle the window, move the cursor to paint over earlier
// lines, or on some terminals write to the clipboard; a bare carriage return or backspaces can hide what was printed
// before them on the line. So:
// - complete escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ESC \`, DCS/SOS/PM/APC `ESC P|X|^|_ … ESC \`, and
//   the short `ESC …` ones) are dropped: they are instructions to the terminal, not text, and showing their bytes
//   would only be noise;
// - every other control character is made visible instead of dropped, so nothing that was said disappears silently: a
//   C0 control or DEL as its Unicode control picture (BEL ␇, backspace ␈, a bare CR ␍, a lone ESC ␛), a C1 control
//   (U+0080-U+009F, which some terminals obey like ESC-sequences) as U+FFFD;
// - newline and tab stay, and a CR right before a newline (CRLF) is taken as the newline.
// Pure. JSON output (--json) never needs this: JSON escapes every control character.

/** complete escape sequences; an unterminated one is not matched, so its ESC is shown as ␛ and the rest as text */
const sequences =
  /\x1b(?:\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[\x20-\x2f]*[\x30-\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e])/g
const controls = /[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]/g

const visible = (c: string): string => {
  const code = c.charCodeAt(0)
  if (code < 0x20) return String.fromCharCode(0x2400 + code)
  if (code === 0x7f) return "\u2421"
  return "\ufffd"
}

/** The text with escape sequences dropped and other control characters (but newline and tab) made visible. Pure. */
export const terminalText = (text: string): string =>
  text.replace(sequences, "").replace(/\r\n/g, "\n").replace(controls, visible)

/**
 * An escape sequence may arrive split over streamed deltas: an unfinished one at the end of what arrived so far is held
 * back (up to this many characters, then shown as text) until the rest comes or the stream ends.
 */
export const maxHeldCharacters = 1024

/** the start of an escape sequence (or a CR that may be half of a CRLF) running to the end of the text */
const unfinished = /(?:\x1b(?:\[[\x30-\x3f]*[\x20-\x2f]*|\][^\x07\x1b]*\x1b?|[PX^_][^\x1b]*\x1b?|[\x20-\x2f]*)?|\r)$/

export interface TerminalStream {
  /** the safe text to print now for this chunk (part of it may be held back) */
  readonly write: (chunk: string) => string
  /** whatever was held back, made safe; the stream starts afresh */
  readonly end: () => string
}

/** terminalText for text that arrives in pieces: the same result as terminalText of the whole, piece by piece. */
export const makeTerminalStream = (): TerminalStream => {
  let held = ""
  return {
    write: (chunk) => {
      const text = held + chunk
      const tail = unfinished.exec(text)
      const cut = tail !== null && text.length - tail.index <= maxHeldCharacters ? tail.index : text.length
      held = text.slice(cut)
      return terminalText(text.slice(0, cut))
    },
    end: () => {
      const rest = held
      held = ""
      return terminalText(rest)
    }
  }
}
