// The `initialize` request a connection opens with, as data: the connection sends it, and the bin's early spawn of a
// cold `run`'s app-server (cli/prelaunch.ts) sends the very same line ahead of it, which the transport then does not
// send twice (Prelaunch.ts). Plain TypeScript with no Effect import, so that early spawn loads nothing else.

export interface ClientInfoOptions {
  readonly clientName?: string | undefined
  readonly clientVersion?: string | undefined
}

export const initializeParams = (options: ClientInfoOptions) => ({
  clientInfo: { name: options.clientName ?? "codex-harness", title: "codex-harness", version: options.clientVersion ?? "0.1.0" },
  // `extensions["openai/form"]` (S30/S31): Codex passes the declared extensions on to every MCP server in the MCP
  // `initialize`, and answers an MCP server's `openai/form` request (the form that may hold `openai/imagePicker`
  // and other extended fields) only when it is there; without it the server gets -32601 and no form is asked.
  capabilities: { experimentalApi: true, extensions: { "openai/form": {} } }
})

/** The first line a connection writes: request id 0 (ids count up from 0), as its writer serializes it. */
export const initializeLine = (options: ClientInfoOptions): string =>
  JSON.stringify({ id: 0, method: "initialize", params: initializeParams(options) })
