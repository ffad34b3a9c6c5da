// The approvals and questions of `serve`'s turns, answered by whichever client answers first. Each one waiting gets an
// id, is published on the EventHub (so every client watching the session sees it) and is answered with the `Answer`
// call by id. A wait is bounded: an approval nobody answers is declined when it expires, a question is declined (the
// ports' rule: never an allow, never left hanging). A turn can instead take a fixed policy for its approvals
// (`approvals: "allow" | "deny"`, as `run --approvals` does), recorded here for as long as the turn runs.
import { Context, Deferred, Duration, Effect, Layer, Ref } from "effect"
import * as crypto from "node:crypto"
import type { ApprovalRequested, Pending, QuestionAsked } from "../../schemas/control.js"
import { ControlFailure } from "../../schemas/control.js"
import { eventsVersion } from "../../schemas/events.js"
import {
  type ApprovalDecision,
  ApprovalPrompts,
  type ApprovalPromptsService,
  type ApprovalRequest,
  describe,
  details
} from "../ports/ApprovalPrompts.js"
import {
  answered,
  declined,
  type QuestionPrompt,
  type QuestionReply,
  Questions,
  type QuestionsService
} from "../ports/Questions.js"
import { EventHub } from "./EventHub.js"
import { approvalEvent } from "./jsonEvents.js"

export type ApprovalPolicy = "ask" | "allow" | "deny"

/** what a client sends with `Answer` */
export interface AnswerInput {
  readonly decision?: "allow_once" | "allow_always" | "deny" | undefined
  readonly answers?: Readonly<Record<string, ReadonlyArray<string>>> | undefined
  readonly decline?: boolean | undefined
}

type Resolution = { readonly _tag: "Approval"; readonly decision: ApprovalDecision } | { readonly _tag: "Question"; readonly reply: QuestionReply }

interface Waiting {
  readonly event: Pending
  readonly answer: Deferred.Deferred<Resolution>
}

export interface InteractionsService {
  readonly approvals: ApprovalPromptsService
  readonly questions: QuestionsService
  readonly answer: (id: string, input: AnswerInput, by: string) => Effect.Effect<void, ControlFailure>
  readonly pending: Effect.Effect<ReadonlyArray<Pending>>
  /** the approval policy of the session's running turn, until `release` */
  readonly setPolicy: (sessionId: string, policy: ApprovalPolicy) => Effect.Effect<void>
  readonly releasePolicy: (sessionId: string) => Effect.Effect<void>
}

export class Interactions extends Context.Tag("codex-harness/control/Interactions")<Interactions, InteractionsService>() {}

export interface InteractionsOptions {
  /** how long an approval or question waits for a client */
  readonly answerTimeout: Duration.DurationInput
}

const version = eventsVersion
const newId = (prefix: string) => `${prefix}-${crypto.randomBytes(6).toString("hex")}`
const decisionOf = { allow_once: "allowOnce", allow_always: "allowAlways", deny: "deny" } as const
const sources = { requestUserInput: "request_user_input", elicitation: "elicitation", urlElicitation: "url_elicitation" } as const
const approvalKinds = { command: "command", fileChange: "file_change", permissions: "permissions", mcpTool: "mcp_tool", diagnostics: "diagnostics" } as const

const sessionOf = (request: ApprovalRequest): string | undefined => request.sessionId

export const make = (options: InteractionsOptions) =>
  Effect.gen(function* () {
    const hub = yield* EventHub
    const waiting = yield* Ref.make(new Map<string, Waiting>())
    const policies = yield* Ref.make(new Map<string, ApprovalPolicy>())
    const timeout = Duration.decode(options.answerTimeout)

    const expiresAt = Effect.map(Effect.clockWith((c) => c.currentTimeMillis), (now) => now + Duration.toMillis(timeout))

    /** publishes `event`, waits for its answer within the bound, and always says how the wait ended */
    const wait = (event: Pending, onTimeout: Resolution) =>
      Effect.gen(function* () {
        const answer = yield* Deferred.make<Resolution>()
        yield* Ref.update(waiting, (m) => new Map(m).set(event.id, { event, answer }))
        yield* hub.publish(event.session_id, event)
        const closed = (outcome: "timed_out" | "withdrawn") =>
          hub.publish(event.session_id, { type: "interaction.closed", version, id: event.id, session_id: event.session_id, outcome })
        // the wait ends by completing the Deferred itself, so it and a client's Answer race on one atomic step: an
        // Answer arriving as the bound passes either wins (and is what Codex gets) or is told it came too late
        return yield* Deferred.await(answer).pipe(
          Effect.timeoutTo({
            duration: timeout,
            onSuccess: (resolution) => Effect.succeed(resolution),
            onTimeout: () =>
              Effect.flatMap(Deferred.succeed(answer, onTimeout), (expired) =>
                expired ? closed("timed_out").pipe(Effect.as(onTimeout)) : Deferred.await(answer))
          }),
          Effect.flatten,
          Effect.onInterrupt(() => Deferred.succeed(answer, onTimeout).pipe(Effect.zipRight(closed("withdrawn")))),
          Effect.ensuring(Ref.update(waiting, (m) => {
            const next = new Map(m)
            next.delete(event.id)
            return next
          }))
        )
      })

    const approvals: ApprovalPromptsService = {
      ask: (request) =>
        Effect.gen(function* () {
          const sessionId = sessionOf(request)
          const policy = sessionId === undefined ? "deny" : (yield* Ref.get(policies)).get(sessionId) ?? "ask"
          // a diagnostics upload is the operator's own command, never something a client of the service approves
          if (request.kind === "diagnostics" || policy !== "ask") {
            const decision: ApprovalDecision = policy === "allow" && request.kind !== "diagnostics" ? "allowOnce" : "deny"
            yield* hub.publish(sessionId, approvalEvent(request, decision, "policy"))
            return decision
          }
          const event: ApprovalRequested = {
            type: "approval.requested",
            version,
            id: newId("approval"),
            session_id: sessionId!,
            kind: approvalKinds[request.kind],
            subject: describe(request),
            detail: details(request),
            expires_at: yield* expiresAt
          }
          const resolution = yield* wait(event, { _tag: "Approval", decision: "noDecision" })
          const decision = resolution._tag === "Approval" ? resolution.decision : "noDecision"
          yield* hub.publish(sessionId, approvalEvent(request, decision, "prompt", { id: event.id, session_id: event.session_id }))
          return decision
        })
    }

    const questions: QuestionsService = {
      ask: (prompt: QuestionPrompt) =>
        Effect.gen(function* () {
          const event: QuestionAsked = {
            type: "question.asked",
            version,
            id: newId("question"),
            session_id: prompt.sessionId,
            source: sources[prompt.source],
            ...(prompt.serverName !== undefined ? { server_name: prompt.serverName } : {}),
            ...(prompt.message !== undefined ? { message: prompt.message } : {}),
            ...(prompt.url !== undefined ? { url: prompt.url } : {}),
            questions: prompt.questions.map((q) => ({
              id: q.id,
              ...(q.header !== undefined ? { header: q.header } : {}),
              text: q.text,
              kind: q.kind,
              options: q.options.map((o) => ({ label: o.label, ...(o.description !== undefined ? { description: o.description } : {}) })),
              allow_other: q.allowOther,
              is_secret: q.isSecret,
              required: q.required,
              ...(q.hint !== undefined ? { hint: q.hint } : {})
            })),
            ...(prompt.problem !== undefined ? { problem: prompt.problem } : {}),
            expires_at: yield* expiresAt
          }
          const resolution = yield* wait(event, { _tag: "Question", reply: declined })
          return resolution._tag === "Question" ? resolution.reply : declined
        }),
      notify: ({ sessionId, text }) =>
        hub.publish(sessionId, { type: "reply", version, session_id: sessionId, source: "notice", text, media: [] })
    }

    const answer = (id: string, input: AnswerInput, by: string) =>
      Effect.gen(function* () {
        const entry = (yield* Ref.get(waiting)).get(id)
        if (entry === undefined) {
          return yield* new ControlFailure({ code: "not_found", message: `nothing waits for an answer with id ${id} (answered, expired or never asked)` })
        }
        let resolution: Resolution
        if (entry.event.type === "approval.requested") {
          if (input.decision === undefined) {
            return yield* new ControlFailure({ code: "usage", message: `${id} is an approval: answer it with a decision (allow_once, allow_always or deny)` })
          }
          resolution = { _tag: "Approval", decision: decisionOf[input.decision] }
        } else {
          if (input.decision !== undefined) {
            return yield* new ControlFailure({ code: "usage", message: `${id} is a question: answer it with answers or decline` })
          }
          if (input.decline === true) resolution = { _tag: "Question", reply: declined }
          else if (input.answers !== undefined) resolution = { _tag: "Question", reply: answered(input.answers) }
          else return yield* new ControlFailure({ code: "usage", message: `${id} is a question: give answers or decline` })
        }
        // the first answer wins; a second one finds nothing waiting
        const won = yield* Deferred.succeed(entry.answer, resolution)
        if (!won) return yield* new ControlFailure({ code: "not_found", message: `${id} was already answered, or expired` })
        // Fix: no longer waiting once answered. The asking fiber removes it too, but only when it next runs: until then
        // a client's Pending (or a Watch's replay) right after its Answer still listed what it had answered.
        yield* Ref.update(waiting, (m) => {
          const next = new Map(m)
          next.delete(id)
          return next
        })
        yield* hub.publish(entry.event.session_id, {
          type: "interaction.closed",
          version,
          id,
          session_id: entry.event.session_id,
          outcome: "answered",
          by
        })
      })

    return {
      approvals,
      questions,
      answer,
      pending: Effect.map(Ref.get(waiting), (m) => [...m.values()].map((w) => w.event)),
      setPolicy: (sessionId, policy) => Ref.update(policies, (m) => new Map(m).set(sessionId, policy)),
      releasePolicy: (sessionId) =>
        Ref.update(policies, (m) => {
          const next = new Map(m)
          next.delete(sessionId)
          return next
        })
    } satisfies InteractionsService
  })

export const layer = (options: InteractionsOptions) => Layer.effect(Interactions, make(options))

/** The ports a turn of `serve` asks through, backed by Interactions. */
export const portsLayer = Layer.mergeAll(
  Layer.effect(ApprovalPrompts, Effect.map(Interactions, (i) => i.approvals)),
  Layer.effect(Questions, Effect.map(Interactions, (i) => i.questions))
)
