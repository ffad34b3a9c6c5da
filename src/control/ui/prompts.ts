// Approval and question cards: what a turn waits for, from this page's turns and any other client's (Watch). One card
// per id, whoever's stream brought it first; it closes when the API says the wait is over (`interaction.closed`:
// answered here or elsewhere, timed out, withdrawn), when this page's answer is accepted, or when the turn reports the
// decision (`approval.decided`). Subjects, details, question texts and URLs are shown as text; a URL is never a link
// (an elicitation's URL is for a person to read, S32).
import type { ApprovalRequested, Pending, QuestionAsked } from "../../../schemas/control.js"
import type { Result } from "./connection.js"
import { button, el, when } from "./dom.js"

export interface AnswerPayload {
  readonly id: string
  readonly decision?: "allow_once" | "allow_always" | "deny"
  readonly answers?: Record<string, ReadonlyArray<string>>
  readonly decline?: boolean
}

export interface Prompts {
  readonly show: (pending: Pending) => void
  readonly closed: (id: string) => void
  /** a turn of `sessionId` reported the decision on an approval of this kind and subject */
  readonly decided: (sessionId: string, kind: string, subject: string) => void
  /**
   * what the server said waits, in an answer to a call made at `askedAt` (performance.now()): cards shown before then
   * for anything else are stale (closed while this page was away); a card shown since may be newer than the answer
   */
  readonly reconcile: (pending: ReadonlyArray<Pending>, askedAt: number) => void
}

const shortId = (id: string) => id.slice(0, 8)

export const make = (container: HTMLElement, answer: (payload: AnswerPayload) => Promise<Result<void>>): Prompts => {
  const cards = new Map<string, HTMLElement>()
  const shownAt = new Map<string, number>()
  // ids whose wait is over: the same request can still arrive on another stream (the turn's and Watch) after its close
  const gone = new Set<string>()

  const close = (id: string) => {
    cards.get(id)?.remove()
    gone.add(id)
    if (gone.size > 500) gone.delete(gone.values().next().value!)
    cards.delete(id)
    shownAt.delete(id)
    container.dataset.count = String(cards.size)
  }

  /** sends an answer; the card goes once it is taken, or says why it was not */
  const send = async (card: HTMLElement, payload: AnswerPayload) => {
    const problem = card.querySelector<HTMLElement>(`[data-testid="card-error"]`)!
    problem.textContent = ""
    const result = await answer(payload)
    if (result.ok) return close(payload.id)
    problem.textContent = result.error
    // nothing waits for it any more: answered elsewhere, expired or withdrawn
    if (result.error.startsWith("not_found")) setTimeout(() => close(payload.id), 1500)
  }

  const approvalCard = (p: ApprovalRequested): HTMLElement => {
    const card = el(
      "section",
      { className: "card approval", testid: "approval-card", data: { id: p.id, session: p.session_id, kind: p.kind } },
      el("h3", {}, `Approval: ${p.kind.replace("_", " ")}`, el("span", { className: "meta" }, ` session ${shortId(p.session_id)} · until ${when(p.expires_at)}`)),
      el("div", { className: "subject", testid: "approval-subject" }, p.subject),
      el("pre", { className: "detail", testid: "approval-detail" }, p.detail),
      el("div", { className: "problem", testid: "card-error" })
    )
    card.append(el(
      "div",
      { className: "actions" },
      button("Allow once", { testid: "approve-once", className: "allow" }, () => send(card, { id: p.id, decision: "allow_once" })),
      button("Always", { testid: "approve-always", className: "allow" }, () => send(card, { id: p.id, decision: "allow_always" })),
      button("Deny", { testid: "approve-deny", className: "deny" }, () => send(card, { id: p.id, decision: "deny" }))
    ))
    return card
  }

  const questionCard = (q: QuestionAsked): HTMLElement => {
    const readers: Array<() => [string, ReadonlyArray<string>] | undefined> = []
    const fields = q.questions.map((field) => {
      // an elicitation's field often has its title as both header and text: said once
      const header = field.header !== undefined && field.header !== field.text ? el("strong", {}, `${field.header}: `) : null
      const label = el("label", { className: "question" }, header, field.text)
      const box = el("div", { className: "field", testid: "question-field", data: { questionId: field.id, kind: field.kind } }, label)
      let other: HTMLInputElement | undefined
      if (field.allow_other || (field.options.length === 0 && field.kind !== "multi")) {
        other = el("input", {
          testid: "question-input",
          attrs: { type: field.is_secret ? "password" : field.kind === "number" || field.kind === "integer" ? "number" : "text", autocomplete: "off" },
          data: { questionId: field.id }
        })
        if (field.options.length > 0) other.placeholder = "or type an answer"
      }
      if (field.kind === "multi") {
        const boxes = field.options.map((o) => {
          const input = el("input", { attrs: { type: "checkbox", value: o.label }, data: { questionId: field.id } })
          box.append(el("label", { className: "option" }, input, ` ${o.label}`, o.description !== undefined ? el("span", { className: "meta" }, ` ${o.description}`) : null))
          return input
        })
        readers.push(() => {
          const chosen = boxes.filter((b) => b.checked).map((b) => b.value)
          const typed = other?.value.trim() ?? ""
          const all = typed === "" ? chosen : [...chosen, typed]
          return all.length === 0 ? undefined : [field.id, all]
        })
      } else if (field.options.length > 0) {
        const select = el("select", { testid: "question-select", data: { questionId: field.id } }, el("option", { attrs: { value: "" } }, "(choose)"))
        for (const o of field.options) select.append(el("option", { attrs: { value: o.label } }, o.description !== undefined ? `${o.label}: ${o.description}` : o.label))
        box.append(select)
        readers.push(() => {
          const typed = other?.value.trim() ?? ""
          const value = typed !== "" ? typed : select.value
          return value === "" ? undefined : [field.id, [value]]
        })
      } else {
        readers.push(() => {
          const value = other?.value ?? ""
          return value.trim() === "" ? undefined : [field.id, [value]]
        })
      }
      if (other !== undefined) box.append(other)
      if (field.hint !== undefined) box.append(el("div", { className: "meta" }, field.hint))
      return box
    })
    const card = el(
      "section",
      { className: "card question", testid: "question-card", data: { id: q.id, session: q.session_id, source: q.source } },
      el("h3", {}, `Question${q.server_name !== undefined ? ` from ${q.server_name}` : ""}`, el("span", { className: "meta" }, ` session ${shortId(q.session_id)} · until ${when(q.expires_at)}`)),
      q.message !== undefined ? el("p", { className: "message" }, q.message) : null,
      // shown, never opened: the address is text to read, not a link to follow
      q.url !== undefined ? el("pre", { className: "url", testid: "question-url" }, q.url) : null,
      q.problem !== undefined ? el("div", { className: "problem" }, q.problem) : null,
      ...fields,
      el("div", { className: "problem", testid: "card-error" })
    )
    card.append(el(
      "div",
      { className: "actions" },
      button("Submit", { testid: "question-submit", className: "allow" }, () => {
        const answers: Record<string, ReadonlyArray<string>> = {}
        for (const read of readers) {
          const pair = read()
          if (pair !== undefined) answers[pair[0]] = pair[1]
        }
        return send(card, { id: q.id, answers })
      }),
      button("Decline", { testid: "question-decline", className: "deny" }, () => send(card, { id: q.id, decline: true }))
    ))
    return card
  }

  const show = (pending: Pending) => {
    if (cards.has(pending.id) || gone.has(pending.id)) return
    const card = pending.type === "approval.requested" ? approvalCard(pending) : questionCard(pending)
    cards.set(pending.id, card)
    shownAt.set(pending.id, performance.now())
    container.append(card)
    container.dataset.count = String(cards.size)
  }

  return {
    show,
    closed: close,
    decided: (sessionId, kind, subject) => {
      for (const [id, card] of cards) {
        if (card.dataset.testid !== "approval-card" || card.dataset.session !== sessionId || card.dataset.kind !== kind) continue
        const shown = card.querySelector(`[data-testid="approval-subject"]`)?.textContent ?? ""
        if (shown.includes(subject)) close(id)
      }
    },
    reconcile: (pending, askedAt) => {
      const waiting = new Set(pending.map((p) => p.id))
      for (const id of [...cards.keys()]) if (!waiting.has(id) && (shownAt.get(id) ?? 0) < askedAt) close(id)
      for (const p of pending) show(p)
    }
  }
}
