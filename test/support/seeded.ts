// A seeded pseudo-random source for tests that must replay: the same seed gives the same numbers. Each independent
// actor takes a stream of its own (`stream(seed, n)`), so what one decides never depends on how the others' fibers
// happened to interleave. mulberry32: small, fast, good enough to pick victims and delays (not for anything secret).
export interface Random {
  /** in [0, 1) */
  readonly next: () => number
  /** an integer in [min, max] */
  readonly int: (min: number, max: number) => number
  readonly pick: <A>(xs: ReadonlyArray<A>) => A
}

export const seeded = (seed: number): Random => {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1))
  return { next, int, pick: (xs) => xs[int(0, xs.length - 1)]! }
}

/** actor `n`'s own stream of the run's seed */
export const stream = (seed: number, n: number): Random => seeded((seed ^ Math.imul(n + 1, 0x9e3779b9)) >>> 0)

/** the run's seed: $envName when set (a replay), else a fresh one */
export const seedFrom = (envName: string): number => {
  const given = process.env[envName]
  if (given !== undefined && given !== "") {
    const n = Number(given)
    if (!Number.isInteger(n) || n < 0) throw new Error(`${envName}=${given}: a whole number, please`)
    return n >>> 0
  }
  return Math.floor(Math.random() * 2 ** 31)
}
