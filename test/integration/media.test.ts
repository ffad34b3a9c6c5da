// Native image generation on the real app-server (S41): the model calls Codex's own `image_gen` tool, Codex fetches the
// image from the (scripted) Images API, saves it under CODEX_HOME/generated_images and reports an `imageGeneration`
// item with its `savedPath`; the harness delivers that file as reply media although the turn has no assistant text,
// and the transcript mirror records it. Codex offers the tool only with a ChatGPT login: `imageGenerationHome`.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { onePixelPng, reply } from "../../src/testing/ScriptedModel.js"
import { fixture, imageGenerationHome, leftBehind } from "../support/harness.js"

describe("native image generation on the real app-server", () => {
  it.scopedLive("[S41] a turn whose only output is a generated image delivers it as reply media, and the mirror records it", () =>
    Effect.gen(function* () {
      // the model's only output: the image_gen call, then an empty reply (no assistant text at all)
      const f = yield* fixture({ replies: [reply.imageGeneration("a single red pixel", "call_img"), reply.steps()] })
      const codexHome = imageGenerationHome(path.join(f.stateDir, "codex-home"), f.model.url)
      const settings = { ...f.settings, providerUrl: undefined, codexHome }
      const outcome = yield* Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(Live.layer(settings).pipe(Layer.provideMerge(RecordingDelivery.layer)))
          const harness = Context.get(context, CodexHarness)
          const result = yield* harness.runTurn({ sessionId: "img", prompt: "draw a red pixel" })
          const replies = yield* Context.get(context, RecordingDelivery.RecordingDelivery).replies
          const records = (yield* Context.get(context, SessionStore).read("img")).records
          return { result, replies, records }
        })
      )
      const { records, replies, result } = outcome

      // Codex offered its tool, called the Images API once, and reported the saved file
      const requests = yield* f.model.requests
      expect(requests[0]!.body).toContain('"name":"image_gen"')
      const images = yield* f.model.imageRequests
      expect(images.map((r) => (r.json as { prompt?: string }).prompt)).toEqual(["a single red pixel"])
      const item = result.items.find((i) => i.type === "imageGeneration") as { savedPath?: string; id?: string } | undefined
      expect(item).toMatchObject({ id: "call_img", savedPath: path.join(codexHome, "generated_images", result.threadId, "call_img.png") })

      // no assistant text, and still one reply: the image, from a file that exists and holds what the API returned
      expect(result.finalText).toBeUndefined()
      expect(result.media).toEqual([item!.savedPath])
      expect(replies).toEqual([{ sessionId: "img", text: undefined, media: [{ kind: "image", path: item!.savedPath }], source: "final" }])
      expect(fs.readFileSync(item!.savedPath!)).toEqual(Buffer.from(onePixelPng, "base64"))

      // the mirror keeps it as a media record of that turn
      const media = records.filter((r) => r._tag === "media")
      expect(media).toEqual([expect.objectContaining({ path: item!.savedPath, turnId: result.turnId })])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )
})
