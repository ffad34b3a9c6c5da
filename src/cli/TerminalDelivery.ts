// Delivery at a terminal: replies on stdout (so `run` output can be piped), the harness's own notices on stderr.
// Plain text is made safe to print first (terminalText: a reply's escape sequences never reach the terminal). With
// --json every reply is one JSON line instead, its text as it was (JSON escapes control characters).
import { Effect, Layer } from "effect"
import { Delivery, type Reply } from "../ports/Delivery.js"
import { line, replyEvent } from "./jsonEvents.js"
import { terminalText } from "../platform/terminalText.js"

const write = (stream: NodeJS.WriteStream, text: string) => Effect.sync(() => void stream.write(text))

const asText = (reply: Reply) => {
  const lines = [...(reply.text !== undefined ? [reply.text] : []), ...reply.media.map((m) => `[${m.kind}] ${m.path}`)]
  return terminalText(lines.join("\n")) + "\n"
}

export const layer = (options: { readonly json: boolean }): Layer.Layer<Delivery> =>
  Layer.succeed(Delivery, {
    deliver: (reply) =>
      options.json
        ? write(process.stdout, line(replyEvent(reply)))
        : reply.source === "notice"
        ? write(process.stderr, `codex-harness: ${terminalText(reply.text ?? "")}\n`)
        : write(process.stdout, asText(reply))
  })
