// Model text at a terminal: escape sequences are dropped, other control characters shown as visible symbols, newline
// and tab kept; streamed pieces give the same text as the whole.
import { describe, expect, it } from "@effect/vitest"
import { makeTerminalStream, maxHeldCharacters, terminalText } from "../../src/platform/terminalText.js"

const ESC = "\u001b"

describe("terminal-safe text", () => {
  it("drops CSI sequences (screen clears, colours, cursor moves)", () => {
    expect(terminalText(`${ESC}[2J${ESC}[Hhello ${ESC}[1;31mred${ESC}[0m ${ESC}[?25l`)).toBe("hello red ")
  })

  it("drops OSC sequences ended by BEL or by ST, payload included", () => {
    expect(terminalText(`${ESC}]0;pwned\u0007hello`)).toBe("hello")
    expect(terminalText(`${ESC}]52;c;ZXZpbA==${ESC}\\copied?`)).toBe("copied?")
    expect(terminalText(`${ESC}]8;;https://evil.example${ESC}\\link${ESC}]8;;${ESC}\\`)).toBe("link")
    expect(terminalText(`${ESC}P+q544e${ESC}\\dcs`)).toBe("dcs")
  })

  it("drops the short ESC sequences (reset, charset)", () => {
    expect(terminalText(`${ESC}c${ESC}(Bplain`)).toBe("plain")
  })

  it("shows C0 controls, DEL and C1 controls instead of passing them on", () => {
    expect(terminalText("bell\u0007 back\b\b space")).toBe("bell␇ back␈␈ space")
    expect(terminalText("rm -rf /\rls")).toBe("rm -rf /␍ls")
    expect(terminalText("del\u007f nul\u0000")).toBe("del␡ nul␀")
    expect(terminalText("c1\u009b2J\u0085next")).toBe("c1\ufffd2J\ufffdnext")
  })

  it("shows a lone ESC, and an unfinished sequence, as text", () => {
    expect(terminalText(`lone ${ESC}`)).toBe("lone ␛")
    expect(terminalText(`${ESC}\n`)).toBe("␛\n")
    expect(terminalText(`${ESC}]0;never ended`)).toBe("␛]0;never ended")
  })

  it("keeps newline and tab, and takes CRLF as a newline", () => {
    expect(terminalText("a\tb\nc\r\nd")).toBe("a\tb\nc\nd")
  })

  it("streamed in pieces of any size, the text is the same as the whole, and no ESC gets out", () => {
    const whole = `pre${ESC}[31mred${ESC}[0m ${ESC}]0;pwned\u0007hello\r\nbye\r ${ESC}]8;;u${ESC}\\x${ESC}`
    for (let size = 1; size <= 7; size++) {
      const stream = makeTerminalStream()
      let out = ""
      for (let i = 0; i < whole.length; i += size) out += stream.write(whole.slice(i, i + size))
      out += stream.end()
      expect(out, `pieces of ${size}`).toBe(terminalText(whole))
      expect(out).not.toContain(ESC)
    }
  })

  it("holds an unfinished sequence only up to its bound", () => {
    const stream = makeTerminalStream()
    expect(stream.write(`${ESC}]0;`)).toBe("")
    const long = "x".repeat(maxHeldCharacters)
    expect(stream.write(long)).toBe(`␛]0;${long}`)
    expect(stream.end()).toBe("")
  })
})
