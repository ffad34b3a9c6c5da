// S25: a process's recent-output buffer keeps the newest output within both bounds (bytes and lines), in arrival
// order across stdout and stderr, and says what it dropped; a poller asking `since` an offset learns what it missed.
import { describe, expect, it } from "vitest"
import * as OutputBuffer from "../../src/processes/OutputBuffer.js"

const bytes = (text: string) => Buffer.from(text, "utf8")

describe("OutputBuffer", () => {
  it("keeps stdout and stderr in arrival order, one piece per line, an unfinished line continued", () => {
    const buffer = OutputBuffer.make({ maxBytes: 1024, maxLines: 100 })
    OutputBuffer.append(buffer, "stdout", bytes("a\nb"))
    OutputBuffer.append(buffer, "stderr", bytes("E\n"))
    OutputBuffer.append(buffer, "stdout", bytes("c\n"))
    const slice = OutputBuffer.since(buffer)
    expect(slice.pieces.map((p) => [p.stream, Buffer.from(p.bytes).toString()])).toEqual([
      ["stdout", "a\n"],
      ["stdout", "b"],
      ["stderr", "E\n"],
      ["stdout", "c\n"]
    ])
    OutputBuffer.append(buffer, "stdout", bytes("d"))
    OutputBuffer.append(buffer, "stdout", bytes("e\n"))
    expect(OutputBuffer.text(OutputBuffer.since(buffer).pieces, "stdout")).toBe("a\nbc\nde\n")
    expect(OutputBuffer.text(OutputBuffer.since(buffer).pieces, "stderr")).toBe("E\n")
  })

  it("past the line bound keeps the newest lines and counts the dropped ones", () => {
    const buffer = OutputBuffer.make({ maxBytes: 1_000_000, maxLines: 3 })
    for (let i = 1; i <= 10; i++) OutputBuffer.append(buffer, "stdout", bytes(`line ${i}\n`))
    const slice = OutputBuffer.since(buffer)
    expect(OutputBuffer.text(slice.pieces)).toBe("line 8\nline 9\nline 10\n")
    expect(slice.droppedLines).toBe(7)
    expect(slice.droppedBytes).toBe(7 * "line N\n".length)
    expect(buffer.bytes).toBe(slice.pieces.reduce((n, p) => n + p.bytes.length, 0))
  })

  it("past the byte bound keeps the newest bytes, cutting the head of an oversized line", () => {
    const buffer = OutputBuffer.make({ maxBytes: 10, maxLines: 100 })
    OutputBuffer.append(buffer, "stdout", bytes("0123\n"))
    OutputBuffer.append(buffer, "stderr", bytes("abcdefghijklmnop"))
    const slice = OutputBuffer.since(buffer)
    expect(OutputBuffer.text(slice.pieces)).toBe("ghijklmnop")
    expect(buffer.bytes).toBe(10)
    expect(slice.droppedBytes).toBe(5 + 6)
    expect(slice.droppedLines).toBe(1)
    expect(slice.next).toBe(21)
  })

  it("both bounds hold at once, whichever is reached first", () => {
    const buffer = OutputBuffer.make({ maxBytes: 64, maxLines: 5 })
    for (let i = 0; i < 1000; i++) OutputBuffer.append(buffer, i % 2 === 0 ? "stdout" : "stderr", bytes(`${i}:${"x".repeat(i % 40)}\n`))
    const slice = OutputBuffer.since(buffer)
    expect(slice.pieces.length).toBeLessThanOrEqual(5)
    expect(buffer.bytes).toBeLessThanOrEqual(64)
    expect(OutputBuffer.text(slice.pieces).endsWith("999:" + "x".repeat(999 % 40) + "\n")).toBe(true)
    expect(slice.droppedBytes + buffer.bytes).toBe(buffer.written)
  })

  it("a poll since an offset returns only what came after it, and how much of it was dropped unseen", () => {
    const buffer = OutputBuffer.make({ maxBytes: 8, maxLines: 100 })
    OutputBuffer.append(buffer, "stdout", bytes("abcd"))
    const first = OutputBuffer.since(buffer, 0)
    expect(OutputBuffer.text(first.pieces)).toBe("abcd")
    expect(first.missedBytes).toBe(0)
    OutputBuffer.append(buffer, "stdout", bytes("efgh"))
    const second = OutputBuffer.since(buffer, first.next)
    expect(OutputBuffer.text(second.pieces)).toBe("efgh")
    OutputBuffer.append(buffer, "stdout", bytes("ijklmnop"))
    const third = OutputBuffer.since(buffer, second.next)
    // 8 new bytes fit; nothing was missed. A poller still at offset 4 missed 4.
    expect(OutputBuffer.text(third.pieces)).toBe("ijklmnop")
    expect(third.missedBytes).toBe(0)
    expect(OutputBuffer.since(buffer, 4).missedBytes).toBe(4)
    expect(OutputBuffer.since(buffer, third.next).pieces).toEqual([])
  })

  it("refuses bounds that could keep nothing", () => {
    expect(() => OutputBuffer.make({ maxBytes: 0, maxLines: 1 })).toThrow(RangeError)
    expect(OutputBuffer.defaults).toEqual({ maxBytes: 1024 * 1024, maxLines: 10_000 })
  })
})
