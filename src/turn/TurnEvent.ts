// A turn's events live in schemas/turnEvents.ts, where front ends read them without depending on src/turn; this
// module keeps the turn room's own imports short.
export * from "../../schemas/turnEvents.js"
