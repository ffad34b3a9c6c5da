// The S30/S31 limits of an MCP elicitation form, in one place so the mapping, the ids and the prompts agree on them.
// Only numbers live here: a limit is never enforced by truncating, so nothing here may cut a form or a value short.

/** S30/S31 limits. Anything beyond them declines the whole request, never truncates it. */
export const limits = {
  /** fields per form (standard and extended) */
  maxFields: 12,
  /** questions per prompt; a secret question is always alone */
  groupSize: 3,
  /** choices per single or multi select field */
  maxChoices: 4,
  /** longest free-text value, in code points; a larger `maxLength` is lowered to it */
  maxStringLength: 4096,
  /** items per `openai/imagePicker` */
  maxImageItems: 4,
  /** longest safe question id */
  maxQuestionIdLength: 32,
  /** longest field name that is mapped at all */
  maxFieldNameLength: 256
} as const
