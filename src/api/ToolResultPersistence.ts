// Public: the optional port that decides what of a dynamic tool's result the session's transcript keeps.
export { ToolResultPersistence, type ToolResultPersistenceService, type ToolResultToPersist } from "../ports/ToolResultPersistence.js"
