// Public (codex-harness/testing): a Delivery that records replies.
export * from "../RecordingDelivery.js"
