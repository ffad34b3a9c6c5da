// @effect/cli's HelpDoc as plain words: what help.ts lays out as pages and errors.ts prints as one line.
import type { HelpDoc } from "@effect/cli"
import type * as Span from "@effect/cli/HelpDoc/Span"

export const spanText = (span: Span.Span): string => {
  switch (span._tag) {
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
    case "Text":
    case "URI":
      return span.value
    default:
      return spanText(span.value)
  }
}

/** HelpDoc's sequences flattened into its blocks, in order */
export const blocks = (doc: HelpDoc.HelpDoc): ReadonlyArray<HelpDoc.HelpDoc> =>
  doc._tag === "Sequence" ? [...blocks(doc.left), ...blocks(doc.right)] : doc._tag === "Empty" ? [] : [doc]

/** a HelpDoc's words without its layout or colours */
export const helpDocText = (doc: HelpDoc.HelpDoc): string =>
  blocks(doc)
    .map((block) => {
      switch (block._tag) {
        case "Header":
        case "Paragraph":
          return spanText(block.value)
        case "Enumeration":
          return block.elements.map(helpDocText).join(", ")
        case "DescriptionList":
          return block.definitions.map(([term, text]) => `${spanText(term)}: ${helpDocText(text)}`).join("; ")
        default:
          return ""
      }
    })
    .join(" ")
