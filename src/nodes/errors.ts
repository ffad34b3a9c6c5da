// Failures of paired nodes (S26, S17), each with a line an operator can act on.
import { Schema } from "effect"

/** Pairing refused or the pairing store unreadable: a bad name or URL, a missing token, a file error. */
export class NodePairingError extends Schema.TaggedError<NodePairingError>()("NodePairingError", {
  node: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `node ${this.node}: ${this.reason}`
  }
}

/** The node could not be reached or registered as the attempt's environment; never a fallback to host execution. */
export class NodeUnreachable extends Schema.TaggedError<NodeUnreachable>()("NodeUnreachable", {
  node: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `node ${this.node} is unreachable: ${this.reason}`
  }
}

/** The link to the node was lost: the attempt is over (its remote processes are ended); only a fresh attempt may follow. */
export class NodeDisconnected extends Schema.TaggedError<NodeDisconnected>()("NodeDisconnected", {
  node: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `the link to node ${this.node} was lost (${this.reason}); the attempt ended, start a fresh one`
  }
}

/** A turn on the node failed on the app-server's side. */
export class NodeTurnFailed extends Schema.TaggedError<NodeTurnFailed>()("NodeTurnFailed", {
  node: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `turn on node ${this.node} failed: ${this.reason}`
  }
}
