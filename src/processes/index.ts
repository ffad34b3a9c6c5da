// S25: sandboxed processes through the app-server, with their bounded output buffers.
export * from "./errors.js"
export * as OutputBuffer from "./OutputBuffer.js"
export { defaults, layer, type Logs, type ProcessesService, type ProcessInfo, Processes, type ProcessStatus, sandboxPolicyFor, type SpawnOptions } from "./Processes.js"
