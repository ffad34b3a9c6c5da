import { Effect, Layer } from "effect"
import * as SM from "../dist/src/testing/ScriptedModel.js"
const program = Effect.gen(function* () {
  const m = yield* SM.make({
    rules: [
      { whenRequestIncludes: "keep it short", reply: SM.reply.text("SHORT ANSWER (steered)") },
      { whenRequestIncludes: "essay", reply: SM.reply.steps({ type: "pause", ms: 15000 }, { type: "message", text: "the long essay" }) }
    ],
    fallback: SM.reply.text("ok")
  })
  console.log("URL", m.url)
  yield* Effect.never
})
Effect.runPromise(Effect.scoped(program))
