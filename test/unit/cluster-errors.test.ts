// What a control client reads when a cluster call fails: one line in words, never @effect/cluster's own message,
// which is a dump of the error's fields (an envelope id, an EntityAddress structure; issue 29 saw those reach clients).
import { EntityNotAssignedToRunner, MailboxFull } from "@effect/cluster/ClusterError"
import * as EntityAddress from "@effect/cluster/EntityAddress"
import * as EntityId from "@effect/cluster/EntityId"
import * as EntityType from "@effect/cluster/EntityType"
import * as ShardId from "@effect/cluster/ShardId"
import { describe, expect, it } from "vitest"
import { describeClusterError } from "../../src/cluster/ClusterClient.js"

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
