// Public: the optional port that observes a session's lifecycle (turns, tool uses, replies, compaction).
export { type EventOrigin, type LifecycleEvent, PluginHooks, type PluginHooksService } from "../ports/PluginHooks.js"
