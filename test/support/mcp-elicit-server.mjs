#!/usr/bin/env node
// A tiny stdio MCP server for the integration tests: each tool asks the client one elicitation (MCP `elicitation/create`)
// and returns the client's answer as its result. What it received is appended, one JSON line per answer, to the file
// named by MCP_ELICIT_LOG, so a test can check exactly what reached the MCP server. The capabilities Codex declared in
// the MCP `initialize` go, as one JSON line, to the file named by MCP_ELICIT_INIT_LOG when it is set.
// A tool whose request has a `method` sends that JSON-RPC method instead of `elicitation/create`: `openai/form`, the
// OpenAI form extension, which Codex answers only when its client declared `capabilities.extensions["openai/form"]`.
import * as fs from "node:fs"
import * as readline from "node:readline"

const log = process.env.MCP_ELICIT_LOG
const send = (message) => process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`)

const elicitations = {
  ask_name: {
    mode: "form",
    message: "What is your name?",
    requestedSchema: { type: "object", properties: { name: { type: "string", title: "Name" } }, required: ["name"] }
  },
  ask_profile: {
    mode: "form",
    message: "Tell us about the project.",
    requestedSchema: {
      type: "object",
      properties: {
        contact: { type: "string", format: "email", title: "Contact email" },
        size: { type: "integer", minimum: 1, maximum: 10, title: "Team size" },
        tier: { type: "string", oneOf: [{ const: "free", title: "Free" }, { const: "pro", title: "Pro" }], title: "Tier" },
        public: { type: "boolean", title: "Public?", default: false }
      },
      required: ["contact", "size", "tier"]
    }
  },
  // the extension's own request (not an elicitation/create mode); its schema may hold extended field types
  ask_openai_form: {
    method: "openai/form",
    message: "Choose a cover for the report.",
    requestedSchema: {
      type: "object",
      properties: {
        title: { type: "string", title: "Report title", maxLength: 80 },
        cover: {
          type: "openai/imagePicker",
          title: "Cover",
          items: [
            { id: "cover-sea", title: "Sea", image: "https://images.example.com/sea.png" },
            { id: "cover-hills", title: "Hills", image: "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4=" }
          ]
        }
      },
      required: ["title", "cover"]
    }
  },
  ask_openai_unknown: {
    method: "openai/form",
    message: "Pick a colour.",
    requestedSchema: { type: "object", properties: { colour: { type: "openai/colorPicker", title: "Colour" } } }
  },
  ask_url: {
    mode: "url",
    message: "Sign in to continue.",
    url: "https://example.com/authorize?state=abc",
    elicitationId: "elicit-1"
  }
}

const tools = [
  ...Object.keys(elicitations).map((name) => ({
    name,
    description: `asks the user (${elicitations[name].method ?? `${elicitations[name].mode} elicitation`})`,
    inputSchema: { type: "object", properties: {} }
  }))
]

let nextId = 0
const waiting = new Map()

const callTool = (request) => {
  const name = request.params?.name
  const elicitation = elicitations[name]
  if (elicitation === undefined) {
    send({ id: request.id, error: { code: -32602, message: `unknown tool ${name}` } })
    return
  }
  const id = `elicit-${++nextId}`
  waiting.set(id, (answer) => {
    if (log !== undefined) fs.appendFileSync(log, `${JSON.stringify({ tool: name, answer })}\n`)
    send({ id: request.id, result: { content: [{ type: "text", text: JSON.stringify(answer) }], isError: false } })
  })
  const { method = "elicitation/create", ...params } = elicitation
  send({ id, method, params })
}

readline.createInterface({ input: process.stdin, crlfDelay: Infinity }).on("line", (line) => {
  if (line.trim() === "") return
  const message = JSON.parse(line)
  if (message.method === undefined) {
    // an answer to our elicitation
    const resume = waiting.get(message.id)
    waiting.delete(message.id)
    resume?.(message.result ?? { error: message.error })
    return
  }
  switch (message.method) {
    case "initialize":
      if (process.env.MCP_ELICIT_INIT_LOG !== undefined) {
        fs.appendFileSync(process.env.MCP_ELICIT_INIT_LOG, `${JSON.stringify({ capabilities: message.params?.capabilities })}\n`)
      }
      send({
        id: message.id,
        result: {
          protocolVersion: message.params?.protocolVersion ?? "2025-06-18",
          capabilities: { tools: {} },
          serverInfo: { name: "elic", version: "1.0.0" }
        }
      })
      break
    case "tools/list":
      send({ id: message.id, result: { tools } })
      break
    case "tools/call":
      callTool(message)
      break
    case "ping":
      send({ id: message.id, result: {} })
      break
    default:
      if (message.id !== undefined) send({ id: message.id, error: { code: -32601, message: `no method ${message.method}` } })
  }
})
