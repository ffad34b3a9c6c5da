// The Control UI's one way to make elements. Everything the page shows that came from the model, the agent, a tool or
// the server (replies, commands, their output, approval details, question texts, titles) is untrusted text: it goes in
// as text nodes (`textContent`, `append(string)`), never as HTML, so a reply holding `<img onerror=...>` is shown as
// those characters and creates no element. Nothing in the UI uses innerHTML or insertAdjacentHTML.

type Child = Node | string | null | undefined | false

export interface Props {
  readonly id?: string
  /** data-testid: the stable name the browser test finds the element by */
  readonly testid?: string
  readonly className?: string
  readonly title?: string
  readonly data?: Readonly<Record<string, string>>
  readonly attrs?: Readonly<Record<string, string>>
  readonly onClick?: (event: Event) => void
}

/** `<tag>` with the given properties and children (strings become text nodes) */
export const el = <K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: ReadonlyArray<Child>): HTMLElementTagNameMap[K] => {
  const node = document.createElement(tag)
  if (props.id !== undefined) node.id = props.id
  if (props.testid !== undefined) node.dataset.testid = props.testid
  if (props.className !== undefined) node.className = props.className
  if (props.title !== undefined) node.title = props.title
  for (const [k, v] of Object.entries(props.data ?? {})) node.dataset[k] = v
  // attribute values are set as values (never parsed as markup); the names are this file's callers' own constants
  for (const [k, v] of Object.entries(props.attrs ?? {})) node.setAttribute(k, v)
  if (props.onClick !== undefined) node.addEventListener("click", props.onClick)
  for (const child of children) if (child !== null && child !== undefined && child !== false) node.append(child)
  return node
}

/** a button that runs `action`, disabled while a returned promise is pending (no double submit) */
export const button = (label: string, props: Props, action: () => void | Promise<unknown>): HTMLButtonElement => {
  const b = el("button", { ...props, attrs: { type: "button", ...props.attrs } }, label)
  b.addEventListener("click", () => {
    const pending = action()
    if (pending instanceof Promise) {
      b.disabled = true
      void pending.finally(() => (b.disabled = false))
    }
  })
  return b
}

/** the element with this id, which the page (index.html) is known to have */
export const byId = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const found = document.getElementById(id)
  if (found === null) throw new Error(`the page has no #${id}`)
  return found as T
}

/** replaces an element's children */
export const replace = (parent: Element, ...children: ReadonlyArray<Child>) => {
  parent.replaceChildren(...children.filter((c): c is Node | string => c !== null && c !== undefined && c !== false))
}

/** a bounded piece of a long text (a command's output), saying how much was left out */
export const clip = (text: string, max = 4000): string =>
  text.length <= max ? text : `${text.slice(0, max)}\n… (${text.length - max} more characters)`

/** a local time for an ISO string or epoch milliseconds/seconds */
export const when = (at: string | number | undefined): string => {
  if (at === undefined) return ""
  const ms = typeof at === "number" ? (at < 1e12 ? at * 1000 : at) : Date.parse(at)
  return Number.isFinite(ms) ? new Date(ms).toLocaleString() : ""
}
