// `codex-harness events schema`: the JSON Schema of the `--json` event stream, made from the same Schema that the
// stream's test decodes a real run with, so the two cannot drift.
import { Console, JSONSchema } from "effect"
import { HarnessEvent } from "../../schemas/events.js"

export const printSchema = Console.log(JSON.stringify(JSONSchema.make(HarnessEvent), null, 2))
