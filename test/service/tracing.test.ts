// An embedder's tracer sees a turn: the turn, the lease of its session's connection, every app-server request, the
// approval and the question handled in it and a manual compaction each run in a span, nested under the caller's.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Tracer } from "effect"
import * as Test from "../../layers/internal/Test.js"
import { Compaction } from "../../src/compaction/Compaction.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { ApprovalPrompts } from "../../src/ports/ApprovalPrompts.js"
import { duringTurn, MockAppServer } from "../../src/testing/MockAppServer.js"

/** the default tracer, recording each span's name and its parent's name */
const recordingTracer = (native: Tracer.Tracer) => {
  const spans: Array<{ readonly name: string; readonly parent: string | undefined }> = []
  const names = new Map<Tracer.AnySpan, string>()
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = native.span(name, parent, context, links, startTime, kind, options)
      names.set(span, name)
      spans.push({ name, parent: Option.match(parent, { onNone: () => undefined, onSome: (p) => names.get(p) }) })
      return span
    },
    context: native.context
  })
  return { tracer, spans }
}

describe("tracing", () => {
  it.scoped("a turn, its lease, its requests, its approval, its question and a compaction are spans under the embedder's own", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const { spans, tracer } = recordingTracer(yield* Effect.tracer)
      yield* mock.setHandler("turn/start", duringTurn((turn, ctx) =>
        ctx.request("item/commandExecution/requestApproval", { ...turn, itemId: "c1", command: "ls", cwd: "/w" }).pipe(
          Effect.zipRight(
            ctx.request("item/tool/requestUserInput", {
              ...turn,
              itemId: "q1",
              questions: [{ id: "pick", header: "Pick", question: "Which?", isOther: false, isSecret: false, options: [{ label: "A" }] }]
            })
          ),
          Effect.zipRight(ctx.finishTurn(turn.threadId, { status: "completed", text: "done" }))
        )))
      yield* harness.runTurn({ sessionId: "traced", prompt: "hi" }).pipe(Effect.withSpan("embedder.handleMessage"), Effect.withTracer(tracer))
      const names = spans.map((s) => s.name)
      expect(spans.find((s) => s.name === "CodexHarness.runTurn")?.parent).toBe("embedder.handleMessage")
      for (const name of ["SessionRuntime.lease", "AppServer.request", "Approvals.decide", "Questions.requestUserInput"]) {
        expect(names).toContain(name)
      }
      // the app-server requests of the turn are inside it: thread/start and turn/start under the turn's tree
      expect(spans.filter((s) => s.name === "AppServer.request").length).toBeGreaterThanOrEqual(2)

      yield* mock.setHandler("thread/compact/start", (params, ctx) =>
        Effect.as(
          ctx.afterReply(
            Effect.gen(function* () {
              const turn = { id: "compact-turn", status: "inProgress", items: [] }
              yield* ctx.notify("turn/started", { threadId: params.threadId, turn })
              yield* ctx.notify("item/completed", { threadId: params.threadId, turnId: turn.id, item: { type: "contextCompaction", id: "cc" } })
              yield* ctx.notify("turn/completed", { threadId: params.threadId, turn: { ...turn, status: "completed" } })
            })
          ),
          {}
        ))
      yield* Effect.flatMap(Compaction, (c) => c.compact("traced")).pipe(Effect.withTracer(tracer))
      expect(spans.map((s) => s.name)).toContain("Compaction.compact")
    }).pipe(
      Effect.provide(
        Test.layer({ script: { turns: "hang" } }).pipe(
          Layer.provide(Layer.succeed(ApprovalPrompts, { ask: () => Effect.succeed("allowOnce") }))
        )
      )
    ))
})
