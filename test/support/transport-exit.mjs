// Runs one Transport scope in a process of its own and then simply returns, so a test can see whether this process
// ends by itself: it must, even while a process outside the app-server's group still holds the other ends of its
// pipes. Prints the stand-in's first stdout line, then "closed" once the scope is closed.
import { NodeFileSystem } from "@effect/platform-node"
import { Effect, Layer, Stream } from "effect"
import { NodeTransportLive, Transport } from "../../dist/src/appserver/Transport.js"

const [standIn] = process.argv.slice(2)
await Effect.runPromise(
  Effect.scoped(
    Effect.gen(function* () {
      const transport = yield* Transport
      const handle = yield* transport.spawn({ codexBin: standIn })
      const [first] = yield* handle.incoming.pipe(Stream.take(1), Stream.runCollect)
      process.stdout.write(`${first?.text ?? ""}\n`)
    })
  ).pipe(Effect.provide(NodeTransportLive.pipe(Layer.provide(NodeFileSystem.layer))))
)
process.stdout.write("closed\n")
