// What a diagnostics bundle keeps of the config and the session (S36): shapes and harmless values, never a secret.
import { describe, expect, it } from "@effect/vitest"
import { render } from "../../src/cli/approvalPrompts.js"
import { reportLines } from "../../src/cli/diagnostics.js"
import { clipStrings, mask, redactString, redactValue, scrubValues, secretValues } from "../../src/appserver/Redaction.js"
import { describe as describeRequest, type DiagnosticsApproval } from "../../src/ports/ApprovalPrompts.js"

describe("diagnostics redaction", () => {
  it("[S36] secret-looking keys, env and header maps lose their values; harmless settings stay", () => {
    const config = {
      model: "gpt-5",
      providerKeyEnv: "MY_PROVIDER_KEY",
      approvalPolicy: "never",
      apiKey: "sk-live-1234567890abcdef",
      auth: { access_token: "abc.def.ghi", refreshToken: "r-123456", password: "hunter22" },
      mcpServers: {
        github: { command: "gh-mcp", args: ["--token=ghs_abcdefgh12345678", "--verbose"], env: { GH_TOKEN: "ghp_abcdefgh12345678", LOG: "debug" } }
      },
      headers: { "X-Custom": "opaque-value" },
      turns: { timeoutSeconds: 3600, silenceSeconds: 120 },
      supervision: { enabled: true }
    }
    const redacted = redactValue(config) as typeof config
    expect(redacted.model).toBe("gpt-5")
    expect(redacted.providerKeyEnv).toBe("MY_PROVIDER_KEY")
    expect(redacted.apiKey).toBe(mask)
    expect(redacted.auth).toEqual({ access_token: mask, refreshToken: mask, password: mask })
    expect(redacted.mcpServers.github.env).toEqual({ GH_TOKEN: mask, LOG: mask })
    expect(redacted.mcpServers.github.args).toEqual([`--token=${mask}`, "--verbose"])
    expect(redacted.headers).toEqual({ "X-Custom": mask })
    expect(redacted.turns).toEqual({ timeoutSeconds: 3600, silenceSeconds: 120 })
    expect(redacted.supervision).toEqual({ enabled: true })
    const text = JSON.stringify(redacted)
    for (const secret of ["sk-live-1234567890abcdef", "abc.def.ghi", "r-123456", "hunter22", "ghs_abcdefgh12345678", "ghp_abcdefgh12345678", "opaque-value"]) {
      expect(text).not.toContain(secret)
    }
  })

  it("[S36] URLs lose their userinfo and credential query values, wherever they are in a string", () => {
    expect(redactString("https://user:pw@proxy.example/v1?api_key=s3cret&region=eu")).toBe("https://***@proxy.example/v1?api_key=***&region=eu")
    expect(redactString("http://127.0.0.1:8080/v1")).toBe("http://127.0.0.1:8080/v1")
    expect(redactString("failed to reach https://bob:hunter2@host.example/x, retrying")).toBe("failed to reach https://***@host.example/x, retrying")
    expect(redactString("ws://alice:pw@10.0.0.2:4500")).not.toContain("pw")
    expect(redactValue({ providerUrl: "https://k:v@api.example/v1" })).toEqual({ providerUrl: "https://***@api.example/v1" })
  })

  it("[S36] bearer and well-known token shapes are masked inside any text", () => {
    expect(redactString("Authorization: Bearer eyJhbGciOi.abc.def")).toBe(`Authorization: Bearer ${mask}`)
    expect(redactString("key sk-proj-abcdefghijklmnop used")).toBe(`key ${mask} used`)
    expect(redactString("ran with password=letmein now")).toBe(`ran with password=${mask} now`)
    expect(redactString("just words, nothing secret")).toBe("just words, nothing secret")
  })

  it("[S36] known secret values from the environment are scrubbed from the whole text, however they got in", () => {
    const env = { OPENAI_API_KEY: "sk-env-value-0123456789", MY_PROVIDER_KEY: "plainvalue42", HOME: "/home/me", GH_TOKEN: "tok-999999", SHORT_KEY: "abc" }
    const values = secretValues(env, ["MY_PROVIDER_KEY"])
    expect([...values].sort()).toEqual(["plainvalue42", "sk-env-value-0123456789", "tok-999999"].sort())
    const text = 'a record said "plainvalue42" and the key sk-env-value-0123456789 and tok-999999 at /home/me'
    expect(scrubValues(text, values)).toBe(`a record said "${mask}" and the key ${mask} and ${mask} at /home/me`)
  })

  it("[S36] recent records are clipped, not dropped", () => {
    expect(clipStrings({ text: "x".repeat(10), n: 3, list: ["yy"] }, 4)).toEqual({ text: "xxxx… (10 chars)", n: 3, list: ["yy"] })
  })
})

describe("the diagnostics approval and report", () => {
  const request: DiagnosticsApproval = {
    kind: "diagnostics",
    sessionId: "s-1",
    destination: "OpenAI, through Codex's feedback upload (feedback/upload)",
    sessionThread: true,
    subAgentThreads: 2,
    includeLogs: true,
    note: "the reply never came"
  }

  it("[S36] the question says what would be sent (where, which threads, the logs, the note) and names no thread id", () => {
    const text = render(request)
    expect(text).toContain("Send diagnostics to OpenAI, through Codex's feedback upload")
    expect(text).toContain("session: s-1")
    expect(text).toContain("threads: the session's thread and 2 sub-agent threads (their ids are printed once they are sent)")
    expect(text).toContain("Codex's logs: included")
    expect(text).toContain('note: "the reply never came"')
    expect(describeRequest(request)).toBe("diagnostics upload of the session's thread and 2 sub-agent threads with Codex's logs")
    expect(describeRequest({ ...request, subAgentThreads: 1, includeLogs: false })).toBe("diagnostics upload of the session's thread and 1 sub-agent thread")
    expect(render({ ...request, sessionThread: false, subAgentThreads: 0 })).toContain("threads: none (Codex's logs only)")
  })

  it("[S36] an approved upload lists the channel, the session, each thread with its upload id and a codex resume line", () => {
    const lines = reportLines({
      sessionId: "s-1",
      channel: "terminal",
      codexHome: "/h",
      logsUploadId: undefined,
      threads: [{ threadId: "t-bound", role: "bound", uploadId: "u-1", resume: "CODEX_HOME=/h codex resume t-bound" }]
    })
    expect(lines).toEqual(["channel: terminal", "session: s-1", "thread t-bound: uploaded, id u-1", "  CODEX_HOME=/h codex resume t-bound"])
  })
})
