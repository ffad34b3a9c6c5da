// Public: what a turn knows beyond its prompt, per turn or per conversation (the optional TurnContexts port).
export type { Skill, WorkspaceFile } from "../turn/Instructions.js"
export { type MemoryMode, type TurnContext, TurnContexts, type TurnContextsService } from "../turn/TurnContext.js"
