// What `--connect` accepts: the control API's own address, or the Control UI's address serve prints (http(s)://HOST:PORT),
// which leads to the same API; credentials in a URL and clear-text WebSockets to another machine are refused.
import { describe, expect, it } from "@effect/vitest"
import { checkUrl, controlUrl } from "../../src/cli/connect.js"

describe("--connect addresses", () => {
  it("the Control UI's address leads to the control API: http to ws, https to wss, at /rpc", () => {
    expect(controlUrl("http://127.0.0.1:4780/")).toBe("ws://127.0.0.1:4780/rpc")
    expect(controlUrl("http://127.0.0.1:4780")).toBe("ws://127.0.0.1:4780/rpc")
    expect(controlUrl("https://harness.example:4780/")).toBe("wss://harness.example:4780/rpc")
    expect(controlUrl("http://[::1]:4780/rpc")).toBe("ws://[::1]:4780/rpc")
    // the API's own addresses, and anything else, are kept as given (and checked as given)
    expect(controlUrl("ws://127.0.0.1:4780/rpc")).toBe("ws://127.0.0.1:4780/rpc")
    expect(controlUrl("ws+unix:/run/h.sock:/rpc")).toBe("ws+unix:/run/h.sock:/rpc")
    expect(controlUrl("http://127.0.0.1:4780/other/page")).toBe("http://127.0.0.1:4780/other/page")
  })

  it("what is refused stays refused once converted: clear text off loopback, credentials, another path", () => {
    expect(checkUrl(controlUrl("http://127.0.0.1:4780/"))).toBeUndefined()
    expect(checkUrl(controlUrl("https://harness.example:4780/"))).toBeUndefined()
    expect(checkUrl(controlUrl("http://harness.example:4780/"))).toContain("in clear")
    expect(checkUrl(controlUrl("http://user:pw@127.0.0.1:4780/"))).toContain("credentials")
    expect(checkUrl(controlUrl("http://127.0.0.1:4780/other/page"))).toContain("expected http(s)://HOST:PORT")
  })
})
