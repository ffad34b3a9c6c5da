// What a session's threads start with: the tools of every turn extension (advertised as dynamic tools, S11), the
// thread-level developer instructions (S6-S10) and the extensions' thread config (per-thread hooks, S20). A supervised
// branch starts its canonical thread with the same (S15).
import { FileSystem } from "@effect/platform"
import { Context, Effect, Layer } from "effect"
import * as path from "node:path"
import { Settings } from "../config/Settings.js"
import type { HarnessTool } from "../ports/DynamicTools.js"
import { dynamicToolSpecs } from "../tools/ToolCatalog.js"
import * as Instructions from "../turn/Instructions.js"
import { type TurnKind, TurnExtensions } from "../turn/TurnExtension.js"
import type { ThreadExtras } from "../turn/TurnRunner.js"
import { fileSignature, readWorkspace, workspaceFileNames } from "../turn/Workspace.js"

export interface ThreadSetup {
  readonly tools: ReadonlyArray<HarnessTool>
  readonly instructions: Instructions.TurnInstructions
  readonly extras: ThreadExtras
}

export interface ThreadSetupService {
  readonly forSession: (sessionId: string, kind?: TurnKind) => Effect.Effect<ThreadSetup>
}

/** sessions (times turn kinds) whose setup is kept */
export const maxCachedSetups = 256

export class ThreadSetups extends Context.Tag("codex-harness/ThreadSetups")<ThreadSetups, ThreadSetupService>() {}

export const make = Effect.gen(function* () {
  const settings = yield* Settings
  const extensions = yield* TurnExtensions
  const fs = yield* FileSystem.FileSystem
  // the scratch is bounded when the instructions are built; a missing or unreadable one is simply absent
  const readCronScratch = (file: string | undefined) =>
    file === undefined
      ? Effect.succeed(undefined)
      : fs.readFileString(file).pipe(
        Effect.map((text) => (text.trim() === "" ? undefined : text)),
        Effect.orElseSucceed(() => undefined)
      )
  const visibleReplies = settings.visibleReplies ?? "automatic"

  // A session's setup is built once and used again while the files it is built from are unchanged (their stat says
  // so): no workspace reads and no instructions rebuilt on a warm turn. Bounded; the oldest entry goes first.
  const built = new Map<string, { readonly signature: string; readonly setup: ThreadSetup }>()
  const workspaceFiles = workspaceFileNames()
  const signatureFor = (kind: TurnKind) =>
    Effect.gen(function* () {
      const workspace = yield* fileSignature(settings.cwd, workspaceFiles)
      const scratch = settings.cronScratchPath
      if (kind !== "heartbeat" || scratch === undefined) return workspace
      return `${workspace}|${yield* fileSignature(path.dirname(scratch), [path.basename(scratch)])}`
    }).pipe(Effect.provideService(FileSystem.FileSystem, fs))

  const forSession = (sessionId: string, kind: TurnKind = "user") =>
    Effect.gen(function* () {
      const key = `${kind}\u0000${sessionId}`
      const signature = yield* signatureFor(kind)
      const known = built.get(key)
      if (known !== undefined && known.signature === signature) return known.setup
      const setup = yield* build(sessionId, kind)
      built.delete(key)
      built.set(key, { signature, setup })
      if (built.size > maxCachedSetups) built.delete(built.keys().next().value!)
      return setup
    }).pipe(Effect.withSpan("ThreadSetup.forSession", { attributes: { sessionId, kind } }))

  const build = (sessionId: string, kind: TurnKind) =>
    Effect.gen(function* () {
      const tools = extensions.flatMap((e) => e.tools?.(sessionId) ?? [])
      const extensionConfig = yield* Effect.forEach(extensions, (e) => e.threadConfig?.(sessionId) ?? Effect.succeed({}))
      const workspace = yield* readWorkspace(settings.cwd).pipe(Effect.provideService(FileSystem.FileSystem, fs))
      const cronScratch = kind === "heartbeat" ? yield* readCronScratch(settings.cronScratchPath) : undefined
      const instructions = Instructions.buildTurnInstructions({
        route: settings.route ?? "native",
        turnKind: kind,
        policyRestricted: settings.policyRestricted ?? false,
        workspace,
        tools: {
          dynamicToolNames: tools.map((t) => t.name),
          memoryToolsAvailable: false,
          sessionsYieldAvailable: false,
          messageToolMode: visibleReplies === "message_tool"
        },
        delivery: { channel: settings.channel ?? "terminal", visibleReplies },
        ...(kind === "heartbeat" ? { heartbeat: cronScratch !== undefined ? { cronScratch } : {} } : {})
      })
      const threadConfig = Object.assign({}, instructions.threadStart.config, ...extensionConfig)
      const extras: ThreadExtras = {
        developerInstructions: instructions.threadStart.developerInstructions,
        config: Object.keys(threadConfig).length > 0 ? threadConfig : undefined,
        dynamicTools: dynamicToolSpecs(tools)
      }
      return { tools, instructions, extras } satisfies ThreadSetup
    })

  return { forSession } satisfies ThreadSetupService
})

export const layer: Layer.Layer<ThreadSetups, never, Settings | TurnExtensions | FileSystem.FileSystem> = Layer.effect(
  ThreadSetups,
  make
)
