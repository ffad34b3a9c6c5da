// Row `ui` of bench/figures.ts (issue 31, item 4): the Control UI's script and how soon its page shows from a local
// serve. The script is dist/bundle/control-ui.js (scripts/bundle.mjs), the file `serve` sends as /ui.js: its size
// minified (goal <= 300 KB) and gzipped. The page is loaded from a running `serve` on 127.0.0.1 by headless Chromium
// (test/support/chromium.ts finds it: CHROMIUM_PATH, Debian's, or npm's @sparticuz/chromium), driven by playwright-core,
// with the token in the fragment as serve prints it; each load in a fresh browser context (nothing cached). Read from
// the page's own Performance entries: first paint and first contentful paint (navigation start to the paint), the
// script's download, and when the page says "connected" (its script ran and serve took the token: POST /rpc).
import * as fs from "node:fs"
import * as path from "node:path"
import * as zlib from "node:zlib"
import { chromium } from "playwright-core"
import { findChromium } from "../../test/support/chromium.js"
import { startServe, stopServe } from "./connect.js"
import { cleanUp, type Context, repoRoot } from "./context.js"
import type { RowResult } from "./rows.js"
import { millis, millisBare, show, spread } from "./stats.js"

const GOAL_KB = 300

interface Load {
  readonly firstPaint: number
  readonly firstContentfulPaint: number
  readonly scriptMs: number
  readonly connected: number
}

/** what the page measured of itself, in ms from navigation start; run in the page, so written as a string */
const measured = `(() => {
  const paint = (name) => performance.getEntriesByName(name)[0]?.startTime ?? NaN
  const script = performance.getEntriesByType("resource").find((e) => e.name.endsWith("/ui.js"))
  return {
    firstPaint: paint("first-paint"),
    firstContentfulPaint: paint("first-contentful-paint"),
    scriptMs: script === undefined ? NaN : script.responseEnd - script.startTime,
    connected: Number(document.getElementById("auth").dataset.connectedAt ?? NaN)
  }
})()`

/** marks, in the page, when its state first reads "connected" (a MutationObserver installed before any script runs) */
const markConnected = `new MutationObserver((_, observer) => {
  const auth = document.getElementById("auth")
  if (auth?.dataset.state === "connected" && auth.dataset.connectedAt === undefined) {
    auth.dataset.connectedAt = String(performance.now())
    observer.disconnect()
  }
}).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-state"], childList: true })`

export const controlUi = async (ctx: Context, runs: number): Promise<RowResult> => {
  const script = fs.readFileSync(path.join(repoRoot, "dist", "bundle", "control-ui.js"))
  const kb = script.length / 1024
  const gzipKb = zlib.gzipSync(script, { level: 9 }).length / 1024
  const launch = await findChromium()
  const serve = await startServe(ctx)
  const loads: Array<Load> = []
  try {
    const ui = new URL("/", serve.url.replace(/^ws/, "http")).href
    const browser = await chromium.launch({
      executablePath: launch.executablePath,
      args: [...launch.args],
      ...(launch.env === undefined ? {} : { env: launch.env })
    })
    try {
      for (let i = 0; i < runs + 1; i++) {
        const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
        try {
          const page = await context.newPage()
          await page.addInitScript(markConnected)
          await page.goto(`${ui}#token=${serve.token}`)
          await page.waitForFunction(`document.getElementById("auth")?.dataset.connectedAt !== undefined`, undefined, { timeout: 30_000 })
          const load = (await page.evaluate(measured)) as Load
          // the first load warms the serve's own paths (and the browser's start): not counted
          if (i > 0) loads.push(load)
        } finally {
          await context.close()
        }
      }
    } finally {
      await browser.close()
    }
  } finally {
    await stopServe(serve)
    await cleanUp(ctx)
  }
  const fcp = spread(loads.map((l) => l.firstContentfulPaint))
  return {
    rows: [
      {
        figure: "Control UI script (dist/bundle/control-ui.js)",
        floor: "-",
        harness: `${kb.toFixed(0)} KB (gzip ${gzipKb.toFixed(0)} KB)`,
        compare: "-",
        goal: `<= ${GOAL_KB} KB`,
        met: kb <= GOAL_KB
      },
      {
        figure: "Control UI first contentful paint (local serve)",
        floor: "-",
        harness: show(fcp, millis, millisBare),
        compare: "-",
        goal: "measured",
        met: undefined
      }
    ],
    notes: [
      `ui: headless Chromium (${launch.source}), ${loads.length} loads from a local serve, each in a fresh context: first paint ` +
      `${show(spread(loads.map((l) => l.firstPaint)), millis, millisBare)}, first contentful paint ${show(fcp, millis, millisBare)}, ` +
      `/ui.js downloaded in ${show(spread(loads.map((l) => l.scriptMs)), millis, millisBare)}, "connected" (its script ran ` +
      `and serve took the token) at ${show(spread(loads.map((l) => l.connected)), millis, millisBare)} after navigation start`
    ]
  }
}
