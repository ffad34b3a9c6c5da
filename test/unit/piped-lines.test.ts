// Piped chat's lines: split at "\n" only (a bare "\r" stays in the message, a CRLF loses its "\r"), and a line over the
// bound is reported by its size, never kept.
import { describe, expect, it } from "@effect/vitest"
import { PassThrough } from "node:stream"
import { linesOf, makeLineSplitter, type PipedLine } from "../../src/cli/chat/piped.js"

const text = (t: string): PipedLine => ({ _tag: "line", text: t })
const bytes = (s: string) => Buffer.from(s, "utf8")

describe("piped chat lines", () => {
  it("a bare CR is part of the line; CRLF ends one; the last line needs no newline", () => {
    const split = makeLineSplitter()
    expect(split.push(bytes("a\rb\nc\r\nd"))).toEqual([text("a\rb"), text("c")])
    expect(split.end()).toEqual([text("d")])
    expect(split.end()).toEqual([])
  })

  it("lines and characters split over chunks come out whole", () => {
    const split = makeLineSplitter()
    const all = bytes("héllo wörld\r\nzwei\n")
    const out: Array<PipedLine> = []
    for (const b of all) out.push(...split.push(Uint8Array.of(b)))
    expect([...out, ...split.end()]).toEqual([text("héllo wörld"), text("zwei")])
  })

  it("a line over the bound is refused with its size, the lines around it are kept", () => {
    const split = makeLineSplitter(8)
    expect(split.push(bytes("short\n0123456"))).toEqual([text("short")])
    expect(split.push(bytes("789abc"))).toEqual([])
    expect(split.push(bytes("def\n12345678\nlast"))).toEqual([{ _tag: "tooLong", bytes: 16 }, text("12345678")])
    expect(split.end()).toEqual([text("last")])
  })

  it("reads a stream line by line and stops reading when closed", async () => {
    const input = new PassThrough()
    const lines = linesOf(input, 1024)
    input.write("one\ntw")
    expect(await lines.next()).toEqual({ done: false, value: text("one") })
    const waiting = lines.next()
    input.write("o\n")
    expect(await waiting).toEqual({ done: false, value: text("two") })
    const pending = lines.next()
    await lines.return!()
    expect(await pending).toEqual({ done: true, value: undefined })
    expect(input.listenerCount("data")).toBe(0)
  })
})
