// Splits a byte stream into newline-terminated lines with a hard cap on line size. A line over the cap is dropped whole
// (its bytes are skipped up to the next newline) and reported, so one huge or garbage message cannot exhaust memory.

export type FramedLine =
  | { readonly _tag: "Line"; readonly text: string }
  | { readonly _tag: "Oversized"; readonly bytes: number }

const NEWLINE = 0x0a
const CARRIAGE_RETURN = 0x0d

export class LineFramer {
  private parts: Array<Uint8Array> = []
  private pendingBytes = 0
  private discarding = false

  constructor(readonly maxLineBytes: number) {}

  push(chunk: Uint8Array): Array<FramedLine> {
    const out: Array<FramedLine> = []
    let start = 0
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start)
      const end = newline === -1 ? chunk.length : newline
      this.append(chunk.subarray(start, end))
      if (newline === -1) break
      this.finishLine(out)
      start = newline + 1
    }
    return out
  }

  /** Bytes held for an unterminated line (bounded by maxLineBytes). */
  get buffered(): number {
    return this.discarding ? 0 : this.pendingBytes
  }

  private append(piece: Uint8Array) {
    if (piece.length === 0) return
    this.pendingBytes += piece.length
    if (this.discarding) return
    if (this.pendingBytes > this.maxLineBytes) {
      this.discarding = true
      this.parts = []
      return
    }
    // copy: the caller's chunk buffer may be reused
    this.parts.push(Uint8Array.prototype.slice.call(piece))
  }

  private finishLine(out: Array<FramedLine>) {
    if (this.discarding) {
      out.push({ _tag: "Oversized", bytes: this.pendingBytes })
    } else if (this.pendingBytes > 0) {
      const bytes = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.pendingBytes)
      const length = bytes[bytes.length - 1] === CARRIAGE_RETURN ? bytes.length - 1 : bytes.length
      if (length > 0) out.push({ _tag: "Line", text: Buffer.from(bytes.buffer, bytes.byteOffset, length).toString("utf8") })
    }
    this.parts = []
    this.pendingBytes = 0
    this.discarding = false
  }
}
