// A command line the --connect client refuses: one line, exit 2 (connect.ts makes it the CLI's UsageError).
export class RemoteUsageError extends Error {
  constructor(readonly line: string) {
    super(line)
  }
}
