// Which headers never reach a paired node (S26), as pure rules.
import { describe, expect, it } from "@effect/vitest"
import { isSensitiveHeader, sensitiveMessageHeaders, sensitiveRequestHeaders } from "../../src/nodes/HeaderFilter.js"

describe("[S26] node header filter", () => {
  it("refuses credential-bearing header names in any case, passes ordinary ones", () => {
    for (const name of ["Authorization", "proxy-authorization", "Cookie", "SET-COOKIE", "X-API-Key", "api-key", "X-Auth-Token",
      "x-amz-security-token", "X-Goog-Api-Key", "OpenAI-Organization", "ChatGPT-Account-Id", "X-CSRF-Token", "x-session-id",
      "X-Client-Secret", "x-signature"]) {
      expect(isSensitiveHeader(name), name).toBe(true)
    }
    for (const name of ["Accept", "Content-Type", "User-Agent", "Host", "X-Request-ID", "Sec-WebSocket-Key", "Connection", "Upgrade"]) {
      expect(isSensitiveHeader(name), name).toBe(false)
    }
  })

  it("finds them in an upgrade request and in a message's params, in every header shape, at any depth", () => {
    expect(sensitiveRequestHeaders({ host: "x", cookie: "a", "x-api-key": "k", upgrade: "websocket" })).toEqual(["cookie", "x-api-key"])
    expect(sensitiveMessageHeaders({ method: "http/request", params: { headers: [{ name: "Cookie", value: "a" }] } })).toEqual(["cookie"])
    expect(sensitiveMessageHeaders({ method: "http/request", params: { headers: [["Authorization", "Bearer x"]] } })).toEqual(["authorization"])
    expect(sensitiveMessageHeaders({ method: "x", params: { nested: [{ request: { headers: { "X-API-Key": "k", Accept: "*/*" } } }] } }))
      .toEqual(["x-api-key"])
    expect(sensitiveMessageHeaders({ method: "http/request", params: { headers: [{ name: "Accept", value: "*/*" }] } })).toEqual([])
    expect(sensitiveMessageHeaders({ method: "process/start", params: { argv: ["ls"] } })).toEqual([])
  })

  it("a message nested past the limit is refused, not passed", () => {
    let deep: unknown = { headers: [] }
    for (let i = 0; i < 40; i++) deep = { inner: deep }
    expect(sensitiveMessageHeaders({ method: "x", params: deep })).toEqual(["<too deep>"])
  })
})
