// LineFramer: bytes in, lines out, with a hard cap on line size. Pure; no runtime.
import { describe, expect, it } from "@effect/vitest"
import { type FramedLine, LineFramer } from "../../src/appserver/LineFramer.js"

const bytes = (text: string) => new TextEncoder().encode(text)
const line = (text: string): FramedLine => ({ _tag: "Line", text })

/** pushes every chunk and returns all framed lines */
const frame = (framer: LineFramer, chunks: ReadonlyArray<string | Uint8Array>) =>
  chunks.flatMap((chunk) => framer.push(typeof chunk === "string" ? bytes(chunk) : chunk))

describe("LineFramer", () => {
  it("[appserver] frames lines split across chunks, and several lines in one chunk", () => {
    const framer = new LineFramer(1024)
    expect(framer.push(bytes('{"a":'))).toEqual([])
    expect(framer.push(bytes("1}\n{\"b\""))).toEqual([line('{"a":1}')])
    expect(framer.push(bytes(":2}\nx\ny\n"))).toEqual([line('{"b":2}'), line("x"), line("y")])
    expect(framer.buffered).toBe(0)
  })

  it("[appserver] strips a trailing CR (CRLF), also when the CR and LF arrive in different chunks", () => {
    const framer = new LineFramer(1024)
    expect(frame(framer, ["one\r\ntwo\r", "\nthree\n"])).toEqual([line("one"), line("two"), line("three")])
    // a CR inside a line is content
    expect(frame(framer, ["a\rb\n"])).toEqual([line("a\rb")])
  })

  it("[appserver] keeps multi-byte UTF-8 characters intact at every split point", () => {
    const text = 'héllo € 𝄞 日本 "✓"'
    const encoded = bytes(text + "\n")
    for (let split = 0; split <= encoded.length; split++) {
      const framer = new LineFramer(1024)
      expect(frame(framer, [encoded.subarray(0, split), encoded.subarray(split)])).toEqual([line(text)])
    }
    // one byte at a time
    const framer = new LineFramer(1024)
    expect(frame(framer, Array.from(encoded, (b) => Uint8Array.of(b)))).toEqual([line(text)])
  })

  it("[appserver] skips blank lines, including a lone CRLF", () => {
    const framer = new LineFramer(1024)
    expect(frame(framer, ["\n\n", "a\n", "\r\n", "\n", " b\n"])).toEqual([line("a"), line(" b")])
  })

  it("[appserver] drops an oversized line whole, reports its size, and frames the next line", () => {
    const framer = new LineFramer(8)
    expect(frame(framer, ["12345678\n"])).toEqual([line("12345678")]) // exactly at the cap: kept
    expect(frame(framer, ["123456789\nok\n"])).toEqual([{ _tag: "Oversized", bytes: 9 }, line("ok")])
    // over the cap across chunks: nothing of it leaks into the next line
    expect(frame(framer, ["abcdef", "ghijkl", "mnop\nnext\n"])).toEqual([{ _tag: "Oversized", bytes: 16 }, line("next")])
  })

  it("[appserver] bounds the bytes held for an unterminated line", () => {
    const max = 64
    const framer = new LineFramer(max)
    framer.push(bytes("x".repeat(40)))
    expect(framer.buffered).toBe(40)
    for (let i = 0; i < 1_000; i++) {
      framer.push(bytes("y".repeat(37)))
      expect(framer.buffered).toBeLessThanOrEqual(max)
    }
    expect(framer.push(bytes("tail\nfine\n"))).toEqual([{ _tag: "Oversized", bytes: 40 + 37_000 + 4 }, line("fine")])
    expect(framer.buffered).toBe(0)
  })

  it("[appserver] copies what it keeps: reusing the caller's chunk buffer does not corrupt a pending line", () => {
    const framer = new LineFramer(1024)
    const chunk = bytes("abc")
    framer.push(chunk)
    chunk.set(bytes("XYZ"))
    expect(framer.push(bytes("def\n"))).toEqual([line("abcdef")])
  })
})
