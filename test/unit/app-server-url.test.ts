// Which app-server URLs are accepted (`--app-server`, config `appServer.url`) and the runtime a session on one records.
import { describe, expect, it } from "@effect/vitest"
import * as AppServerUrl from "../../src/appserver/AppServerUrl.js"
import * as HarnessConfig from "../../src/config/HarnessConfig.js"
import * as Runtimes from "../../src/session/Runtimes.js"

const base = { stateDir: "/s", cwd: "/w", approvalPolicy: "never", sandbox: "read-only" } as const

describe("[S37] app-server URLs", () => {
  it("accepts ws:// on loopback and wss:// anywhere", () => {
    for (const url of ["ws://127.0.0.1:4500", "ws://localhost:4500", "ws://[::1]:4500", "ws://127.1.2.3:1", "wss://codex.example.com", "wss://10.0.0.5:443/app"]) {
      expect(AppServerUrl.check(url), url).toBeUndefined()
    }
  })

  it("refuses plain ws:// to another host, with the two ways that work (no override flag)", () => {
    for (const url of ["ws://10.0.0.5:4500", "ws://0.0.0.0:4500", "ws://codex.example.com:4500", "ws://[::2]:1"]) {
      expect(AppServerUrl.check(url), url).toMatch(/^ws:\/\/ is accepted only to a loopback address .*SSH port forward.*wss:\/\//)
    }
  })

  it("refuses other schemes, credentials and tokens in the URL without repeating them", () => {
    expect(AppServerUrl.check("http://127.0.0.1:4500")).toBe("expected a ws:// or wss:// URL, got http://")
    expect(AppServerUrl.check("not a url")).toBe("expected a ws://HOST:PORT or wss://HOST[:PORT] URL")
    const withUser = AppServerUrl.check("ws://me:s3cret@127.0.0.1:4500")
    expect(withUser).toContain("credentials do not belong in the URL")
    expect(withUser).not.toContain("s3cret")
    expect(AppServerUrl.check("ws://127.0.0.1:4500/?token=s3cret")).not.toContain("s3cret")
  })

  it("a session of these settings records a websocket runtime keyed by its URL; its client spec starts nothing", () => {
    const settings = { ...base, appServerUrl: "ws://127.0.0.1:4500", providerUrl: "http://127.0.0.1:9/v1", codexHome: "/h" }
    const runtime = Runtimes.runtimeFor(settings, "/user-home")
    expect(runtime).toEqual({ transport: "websocket", url: "ws://127.0.0.1:4500", codexHome: "", poolKey: "websocket|ws://127.0.0.1:4500", locked: false })
    expect(Runtimes.isRemote(runtime)).toBe(true)
    const spec = Runtimes.clientSpecFor(runtime, { ...settings, appServerTokenEnv: "MY_TOKEN" })
    expect(spec).toEqual({ url: "ws://127.0.0.1:4500", tokenEnv: "MY_TOKEN", requestTimeout: undefined })
    expect(Runtimes.isRemote(Runtimes.runtimeFor(base, "/user-home"))).toBe(false)
  })

  it("config appServer.url and tokenEnv; --app-server wins over the file", () => {
    const file = { appServer: { url: "ws://127.0.0.1:1", tokenEnv: "T" } }
    expect(HarnessConfig.merge(file, {}).appServer).toMatchObject({ url: "ws://127.0.0.1:1", tokenEnv: "T" })
    expect(HarnessConfig.merge(file, { appServerUrl: "wss://x.example" }).appServer.url).toBe("wss://x.example")
    expect("url" in HarnessConfig.merge({}, {}).appServer).toBe(false)
  })
})
