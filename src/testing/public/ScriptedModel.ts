// Public (codex-harness/testing): the scripted model server and its script shapes.
export * from "../ScriptedModel.js"
