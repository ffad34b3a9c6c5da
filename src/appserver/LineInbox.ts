// The receive side of a transport: lines handed over synchronously by a Node callback (a stdout `data` event, a socket
// frame) wait in one mailbox until the connection's reader takes them, all at once. Taking everything that is there in
// one step matters on the hot path: a turn's notifications often arrive several to a chunk, and the reader then wakes
// once per chunk instead of once per line. The mailbox does not grow without bound: past a high-water mark the source
// is paused (the kernel pipe or TCP then holds the rest on the sender's side) and resumed once the reader has taken.
// The connection's reader takes the lines with `readLines`, a loop straight on the mailbox: as a Stream (Mailbox.toStream,
// a stage per chunk, runForEach) the same lines cost about 450 steps of Effect's run loop per warm turn, a sixth of a
// whole turn's (bench/turn-ops.ts); `stream` stays for readers that want one.
import { Chunk, Effect, Exit, Mailbox, Option, Stream } from "effect"
import type { FramedLine } from "./LineFramer.js"

/** A Node source that can stop and restart its callbacks (a Readable, a `ws` socket). */
export interface PausableSource {
  pause(): void
  resume(): void
}

export interface LineInbox {
  /** called from the source's callback: never waits; pauses the source at the high-water mark */
  readonly offer: (lines: Iterable<FramedLine>) => void
  /** called from the source's end (or error) callback: the stream ends once what is held has been read */
  readonly end: () => void
  /** the lines, in the chunks they were taken in; single consumer */
  readonly stream: Stream.Stream<FramedLine>
  /** the same lines, each given to `onLine` in order, until the source has ended and all were read; single consumer */
  readonly readLines: (onLine: (line: FramedLine) => Effect.Effect<void>) => Effect.Effect<void>
}

export const make = (source: PausableSource, highWater: number): Effect.Effect<LineInbox> =>
  Effect.map(Mailbox.make<FramedLine>(), (mailbox) => {
    const lowWater = Math.floor(highWater / 2)
    let paused = false
    const resumeIfDrainedNow = () => {
      // bridge: read on the reader's fiber right after a take; the callbacks that fill the mailbox run outside fibers
      const size = Option.getOrElse(mailbox.unsafeSize(), () => 0)
      if (paused && size <= lowWater) {
        paused = false
        source.resume()
      }
    }
    const resumeIfDrained = Effect.sync(resumeIfDrainedNow)
    const readLines = (onLine: (line: FramedLine) => Effect.Effect<void>): Effect.Effect<void> => {
      const loop: Effect.Effect<void> = Effect.flatMap(mailbox.takeAll, ([lines, done]) => {
        // on the reader's fiber, right after the take (as resumeIfDrained)
        resumeIfDrainedNow()
        const each = Chunk.isNonEmpty(lines) && lines.length === 1 ? onLine(Chunk.headNonEmpty(lines)) : Effect.forEach(lines, onLine, { discard: true })
        return done ? each : Effect.zipRight(each, loop)
      })
      return loop
    }
    return {
      offer: (lines) => {
        // bridge: inside the source's callback, which must not wait: the mailbox is unbounded, pausing bounds it
        mailbox.unsafeOfferAll(lines)
        // bridge: the same callback, after the offer above
        if (!paused && Option.getOrElse(mailbox.unsafeSize(), () => 0) >= highWater) {
          paused = true
          source.pause()
        }
      },
      end: () => {
        // bridge: the source's end callback; the reader reads what is held, then sees the end
        mailbox.unsafeDone(Exit.void)
      },
      stream: Mailbox.toStream(mailbox).pipe(Stream.mapChunksEffect((chunk) => Effect.as(resumeIfDrained, chunk))),
      readLines
    }
  })
