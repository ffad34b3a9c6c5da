// Statistics and the table of bench/figures.ts.

export const median = (xs: ReadonlyArray<number>): number => {
  if (xs.length === 0) return NaN
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
  readonly n: number
}

export const spread = (xs: ReadonlyArray<number>): Spread => ({
  median: median(xs),
  min: Math.min(...xs),
  max: Math.max(...xs),
  n: xs.length
})

/** "0.55 s [0.52-0.60]": the median, then min-max when there is more than one sample */
export const show = (s: Spread, unit: (x: number) => string, bare: (x: number) => string = unit): string =>
  s.n > 1 && s.min !== s.max ? `${unit(s.median)} [${bare(s.min)}-${bare(s.max)}]` : unit(s.median)

export const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`
export const secondsBare = (ms: number) => (ms / 1000).toFixed(2)
export const millis = (ms: number) => `${ms.toFixed(0)} ms`
export const millisBare = (ms: number) => ms.toFixed(0)
export const megabytes = (kb: number) => `${(kb / 1024).toFixed(0)} MB`
export const megabytesBare = (kb: number) => (kb / 1024).toFixed(0)
export const signed = (x: number, unit: (x: number) => string) => `${x >= 0 ? "+" : "-"}${unit(Math.abs(x))}`
export const times = (x: number) => `${x.toFixed(2)}x`

export interface Row {
  readonly figure: string
  readonly floor: string
  readonly harness: string
  readonly compare: string
  readonly goal: string
  /** undefined: a figure without a goal of its own */
  readonly met: boolean | undefined
}

export const failedRow = (figure: string, goal: string, error: unknown): Row => ({
  figure,
  floor: "-",
  harness: `failed: ${error instanceof Error ? error.message.split("\n")[0]!.slice(0, 80) : String(error)}`,
  compare: "-",
  goal,
  met: false
})

/** a Markdown table, its columns padded so it also reads as plain text */
export const table = (rows: ReadonlyArray<Row>): ReadonlyArray<string> => {
  const header = ["figure", "raw floor", "codex-harness", "ratio / diff", "goal", "met?"]
  const cells = rows.map((r) => [r.figure, r.floor, r.harness, r.compare, r.goal, r.met === undefined ? "-" : r.met ? "yes" : "NO"])
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)))
  const line = (c: ReadonlyArray<string>) => `| ${c.map((x, i) => x.padEnd(widths[i]!)).join(" | ")} |`
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...cells.map(line)]
}
