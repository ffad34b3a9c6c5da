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
