// A sandboxed process's recent output (S25): stdout and stderr (or PTY output, as stdout) kept in arrival order, bounded
// in bytes AND in lines, the oldest dropped first with a count of what was dropped. Positions are absolute byte offsets
// since the process started, so a poller asks for what came `since` its last offset and learns what it missed. Pure: no
// effects, no clock; the Processes service owns one per process.

export type OutputStream = "stdout" | "stderr"

/** The documented bounds: 1 MiB and 10,000 lines of recent output per process, whichever is reached first. */
export const defaults = { maxBytes: 1024 * 1024, maxLines: 10_000 } as const

export interface Bounds {
  readonly maxBytes: number
  readonly maxLines: number
}

/** One line of one stream (ending in "\n"), or its unfinished tail; `offset` is where its first byte was written. */
export interface Piece {
  readonly stream: OutputStream
  readonly offset: number
  readonly bytes: Uint8Array
}

export interface Slice {
  readonly pieces: ReadonlyArray<Piece>
  /** pass this as `since` next time */
  readonly next: number
  /** bytes between `since` and the oldest kept byte that were dropped before this poll saw them */
  readonly missedBytes: number
  /** everything dropped so far, in bytes and in (whole or partial) lines */
  readonly droppedBytes: number
  readonly droppedLines: number
}

export interface OutputBuffer {
  readonly bounds: Bounds
  readonly pieces: Array<Piece>
  /** bytes ever written: the offset of the next byte */
  written: number
  bytes: number
  droppedBytes: number
  droppedLines: number
}

export const make = (bounds: Bounds = defaults): OutputBuffer => {
  if (!(bounds.maxBytes > 0 && bounds.maxLines > 0)) throw new RangeError("output buffer bounds must be positive")
  return { bounds, pieces: [], written: 0, bytes: 0, droppedBytes: 0, droppedLines: 0 }
}

const concat = (a: Uint8Array, b: Uint8Array): Uint8Array => {
  const out = new Uint8Array(a.length + b.length)
  out.set(a, 0)
  out.set(b, a.length)
  return out
}

const endsLine = (bytes: Uint8Array) => bytes.length > 0 && bytes[bytes.length - 1] === 0x0a

/** Appends a chunk of one stream, then drops the oldest output past either bound. Mutates `buffer`. */
export const append = (buffer: OutputBuffer, stream: OutputStream, chunk: Uint8Array): void => {
  let start = 0
  while (start < chunk.length) {
    const newline = chunk.indexOf(0x0a, start)
    const end = newline === -1 ? chunk.length : newline + 1
    const part = chunk.subarray(start, end)
    const last = buffer.pieces[buffer.pieces.length - 1]
    // an unfinished line of the same stream goes on; another stream's output starts a piece of its own
    if (last !== undefined && last.stream === stream && !endsLine(last.bytes) && last.offset + last.bytes.length === buffer.written) {
      buffer.pieces[buffer.pieces.length - 1] = { ...last, bytes: concat(last.bytes, part) }
    } else {
      buffer.pieces.push({ stream, offset: buffer.written, bytes: part.slice() })
    }
    buffer.written += part.length
    buffer.bytes += part.length
    start = end
  }
  trim(buffer)
}

const trim = (buffer: OutputBuffer): void => {
  const { maxBytes, maxLines } = buffer.bounds
  while (buffer.pieces.length > maxLines) dropFirst(buffer)
  while (buffer.bytes > maxBytes) {
    const first = buffer.pieces[0]!
    const excess = buffer.bytes - maxBytes
    if (first.bytes.length > excess) {
      // keep the newest part of an oversized line; its head counts as dropped bytes (the line is still there)
      buffer.pieces[0] = { ...first, offset: first.offset + excess, bytes: first.bytes.slice(excess) }
      buffer.bytes -= excess
      buffer.droppedBytes += excess
    } else {
      dropFirst(buffer)
    }
  }
}

const dropFirst = (buffer: OutputBuffer): void => {
  const first = buffer.pieces.shift()!
  buffer.bytes -= first.bytes.length
  buffer.droppedBytes += first.bytes.length
  buffer.droppedLines += 1
}

/** What was written at or after `since` (default: everything kept), with what the poller missed. */
export const since = (buffer: OutputBuffer, since = 0): Slice => {
  const oldest = buffer.pieces[0]?.offset ?? buffer.written
  const from = Math.max(since, 0)
  const pieces: Array<Piece> = []
  for (const piece of buffer.pieces) {
    const end = piece.offset + piece.bytes.length
    if (end <= from) continue
    pieces.push(piece.offset >= from ? piece : { ...piece, offset: from, bytes: piece.bytes.subarray(from - piece.offset) })
  }
  return {
    pieces,
    next: buffer.written,
    missedBytes: Math.max(0, Math.min(oldest, buffer.written) - from),
    droppedBytes: buffer.droppedBytes,
    droppedLines: buffer.droppedLines
  }
}

/** The kept output as text, per stream or all of it in order. */
export const text = (pieces: ReadonlyArray<Piece>, stream?: OutputStream): string =>
  Buffer.concat(pieces.filter((p) => stream === undefined || p.stream === stream).map((p) => p.bytes)).toString("utf8")
