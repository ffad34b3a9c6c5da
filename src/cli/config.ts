// `codex-harness config schema|show`: the config file's JSON Schema, and the settings a command would actually use.
// Loaded when one of them runs; their flags are in commands/config.ts.
import { Console, Effect, Option } from "effect"
import * as CodexArgs from "../appserver/CodexArgs.js"
import * as HarnessConfig from "../config/HarnessConfig.js"
import type { ShowOptions } from "./commands/config.js"
import { BadOption, checkCodexHomeFlags, codexHomeOverrides, loadFor } from "./settings.js"

export const printSchema = Console.log(JSON.stringify(HarnessConfig.jsonSchema(), null, 2))

export const show = (options: ShowOptions) =>
  Effect.gen(function* () {
    const providerUrl = Option.getOrUndefined(options.providerUrl)
    const problem = providerUrl === undefined ? undefined : CodexArgs.checkProviderUrl(providerUrl)
    if (problem !== undefined) return yield* Effect.fail(new BadOption({ option: "provider-url", reason: problem }))
    yield* checkCodexHomeFlags(options)
    const file = yield* loadFor(options)
    const effective = HarnessConfig.merge(file, {
      model: Option.getOrUndefined(options.model),
      providerUrl,
      approvalPolicy: Option.getOrUndefined(options.approvalPolicy),
      sandbox: Option.getOrUndefined(options.sandbox),
      ...codexHomeOverrides(options),
      codexBin: Option.getOrUndefined(options.codexBin)
    })
    yield* Console.log(JSON.stringify(effective, null, 2))
  })
