// How a command through a serve fails, as the one line the CLI prints and its exit code (2: usage, 1: anything else),
// the same whether the plain --connect client or the Effect commands (connect.ts) met it. Pure.
import type { WireFailure } from "../../control/ControlWire.js"
import { tokenEnv } from "./target.js"

export interface CliFailure {
  readonly line: string
  readonly exitCode: number
}

export const unreachableLine = (url: string, reason: string) => `cannot reach codex-harness serve at ${url}: ${reason}`

export const refusedTokenLine = (url: string) =>
  `codex-harness serve at ${url} refused the token (HTTP 401): give that serve's token in $${tokenEnv}, or use its state dir (its serve.token)`

export const tooLargeLine = (url: string) =>
  `codex-harness serve at ${url} refused the request as too large (past its --max-request-bytes, 4 MiB unless set): send a shorter prompt`

/** the connection was refused with 401: the serve is there and the token is not its own */
export const isRefusedToken = (reason: string) => / 401\b/.test(reason)

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim()

/** what a failed call of the wire means at the CLI */
export const ofWire = (failure: WireFailure, url: string): CliFailure => {
  switch (failure._tag) {
    case "ControlFailure":
      return { line: oneLine(failure.message), exitCode: failure.code === "usage" ? 2 : 1 }
    case "Lost":
      if (failure.closeCode === 1009 || failure.httpStatus === 413) return { line: tooLargeLine(url), exitCode: 2 }
      if (failure.httpStatus === 401 || isRefusedToken(failure.message)) return { line: refusedTokenLine(url), exitCode: 1 }
      return { line: unreachableLine(url, oneLine(failure.message)), exitCode: 1 }
    case "Defect":
      return { line: `internal error: ${oneLine(failure.message)}`, exitCode: 1 }
    case "Interrupted":
      return { line: "interrupted", exitCode: 1 }
  }
}
