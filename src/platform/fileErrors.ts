// One readable reason for a failed file operation, for the one-line errors people see: the operating system's own
// words without the errno prefix ("no such file or directory, open '/x'"), never a stack.
import type { PlatformError } from "@effect/platform/Error"

export const describeFileError = (error: PlatformError): string => {
  const text = error.description ?? error.message
  return text.replace(/^[A-Z]+: /, "")
}

/** The file is not there (ENOENT). */
export const isNotFound = (error: PlatformError): boolean => error._tag === "SystemError" && error.reason === "NotFound"
