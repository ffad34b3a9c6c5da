// What a control client reads when a cluster call fails: one line in words, never @effect/cluster's own message,
// which is a dump of the error's fields (an envelope id, an EntityAddress structure; issue 29 saw those reach clients).
import { EntityNotAssignedToRunner, MailboxFull } from "@effect/cluster/ClusterError"
import * as EntityAddress from "@effect/cluster/EntityAddress"
import * as EntityId from "@effect/cluster/EntityId"
import * as EntityType from "@effect/cluster/EntityType"
import * as ShardId from "@effect/cluster/ShardId"
import { describe, expect, it } from "vitest"
import type { ControlEvent } from "../../schemas/control.js"
import { describeClusterError, onceEach } from "../../src/cluster/ClusterClient.js"
import { connectFailure, databaseName } from "../../src/cluster/ClusterDatabase.js"

describe("describeClusterError", () => {
  it("names a cluster error in words instead of its fields", () => {
    const address = EntityAddress.make({ shardId: ShardId.make("default", 7), entityType: EntityType.EntityType.make("Session"), entityId: EntityId.make("s1") })
    const moving = new EntityNotAssignedToRunner({ address })
    // the control: the error's own message is the unreadable dump
    expect(moving.message).toContain("EntityAddress")
    expect(describeClusterError(moving)).toBe("the session is moving to another runner")
    expect(describeClusterError(new MailboxFull({ address }))).toBe("the session has too many messages waiting")
  })

  it("keeps another error's first line, bounded", () => {
    expect(describeClusterError(new Error("connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrap"))).toBe("connect ECONNREFUSED 127.0.0.1:5432")
    expect(describeClusterError("x".repeat(1000))).toHaveLength(300)
  })
})

describe("a database that cannot be reached, in words", () => {
  it("names the database as USER@HOST:PORT/DB, never with its password", () => {
    expect(databaseName("postgres://harness:s3cret@db.example:6543/cluster")).toBe("harness@db.example:6543/cluster")
    expect(databaseName("postgresql://10.0.0.5/cluster")).toBe("10.0.0.5/cluster")
    expect(databaseName("not a url")).toBe("the cluster's database")
  })

  it("says why: the server's words, the socket's, or an AggregateError's first error (its own message is empty)", () => {
    expect(connectFailure(new Error('password authentication failed for user "harness"'))).toBe('password authentication failed for user "harness"')
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5999"), { code: "ECONNREFUSED" })
    // localhost has two addresses: Node reports both in an AggregateError with no message
    const both = Object.assign(new AggregateError([refused, new Error("connect ECONNREFUSED ::1:5999")], ""), { code: "ECONNREFUSED" })
    expect(both.message).toBe("")
    expect(connectFailure(both)).toBe("connect ECONNREFUSED 127.0.0.1:5999")
    expect(connectFailure(Object.assign(new Error(""), { code: "ETIMEDOUT" }))).toBe("ETIMEDOUT")
    expect(connectFailure(new Error("first\n    at somewhere"))).toBe("first")
  })
})

describe("onceEach: a turn's events once each, however often its message was delivered", () => {
  const v = 1 as const
  const selected: ControlEvent = { type: "session.selected", version: v, session_id: "s", created: false }
  const reply = (text: string, source: "final" | "notice" = "final"): ControlEvent => ({ type: "reply", version: v, session_id: "s", source, text, media: [] })
  const completed: ControlEvent = { type: "turn.completed", version: v, session_id: "s", thread_id: "t", turn_id: "u", final_text: "hi", usage: null }

  it("a second delivery's replay after the first one's end adds only the reply not yet passed on", () => {
    const pass = onceEach()
    // the first delivery was cut after its turn.completed; the second replays [turn.completed, reply]
    const stream = [selected, reply("thinking", "notice"), completed, selected, reply("thinking", "notice"), completed, reply("hi")]
    expect(stream.filter(pass)).toEqual([selected, reply("thinking", "notice"), completed, reply("hi")])
  })

  it("the same reply twice in one delivery passes twice; one terminal event at most", () => {
    const pass = onceEach()
    expect([selected, reply("again"), reply("again"), completed, completed, reply("hi")].filter(pass))
      .toEqual([selected, reply("again"), reply("again"), completed, reply("hi")])
  })
})
