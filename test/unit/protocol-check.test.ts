// Fabricated generated schemas: the parts of `codex app-server generate-json-schema` (0.171.0) that schemas/protocol.ts
// touches, trimmed (descriptions, defaults and unrelated fields dropped; refs to dropped definitions replaced by `{}`).
// Each test breaks one thing the way an upgrade could and expects checkContract to name the method and the field.
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import {
  checkContract,
  type Contract,
  type ContractProblem,
  formatProblem,
  type GeneratedSchema,
  harnessContract,
  type ProblemKind,
  summarize
} from "../../scripts/protocol-check/index.js"

// JSON schema nodes, mutated freely by the tests
type Node = any
interface Fixture {
  definitions: Record<string, Node>
  clientRequests: Record<string, string | undefined>
  serverNotifications: Record<string, string | undefined>
  serverRequests: Record<string, string | undefined>
}

const definitions: Record<string, Node> = {
  InitializeParams: {
    properties: {
      capabilities: {anyOf: [{"$ref": "#/definitions/InitializeCapabilities"}, {type: "null"}]},
      clientInfo: {"$ref": "#/definitions/ClientInfo"}
    },
    required: ["clientInfo"],
    title: "InitializeParams",
    type: "object"
  },
  ClientInfo: {
    properties: {name: {type: "string"}, title: {type: ["string", "null"]}, version: {type: "string"}},
    required: ["name", "version"],
    type: "object"
  },
  InitializeCapabilities: {
    properties: {
      experimentalApi: {type: "boolean"},
      extensions: {additionalProperties: true, type: ["object", "null"]},
      optOutNotificationMethods: {items: {type: "string"}, type: ["array", "null"]},
      requestAttestation: {type: "boolean"}
    },
    type: "object"
  },
  InitializeResponse: {
    properties: {
      codexHome: {allOf: [{"$ref": "#/definitions/AbsolutePathBuf"}]},
      platformFamily: {type: "string"},
      platformOs: {type: "string"},
      userAgent: {type: "string"}
    },
    required: ["codexHome", "platformFamily", "platformOs", "userAgent"],
    title: "InitializeResponse",
    type: "object"
  },
  AbsolutePathBuf: {type: "string"},
  ThreadStartParams: {
    properties: {
      approvalPolicy: {anyOf: [{"$ref": "#/definitions/AskForApproval"}, {type: "null"}]},
      approvalsReviewer: {anyOf: [{"$ref": "#/definitions/ApprovalsReviewer"}, {type: "null"}]},
      baseInstructions: {type: ["string", "null"]},
      config: {additionalProperties: true, type: ["object", "null"]},
      cwd: {type: ["string", "null"]},
      developerInstructions: {type: ["string", "null"]},
      dynamicTools: {items: {}, type: ["array", "null"]},
      environments: {items: {"$ref": "#/definitions/TurnEnvironmentParams"}, type: ["array", "null"]},
      ephemeral: {type: ["boolean", "null"]},
      model: {type: ["string", "null"]},
      modelProvider: {type: ["string", "null"]},
      personality: {anyOf: [{"$ref": "#/definitions/Personality"}, {type: "null"}]},
      sandbox: {anyOf: [{"$ref": "#/definitions/SandboxMode"}, {type: "null"}]},
      serviceName: {type: ["string", "null"]},
      serviceTier: {type: ["string", "null"]}
    },
    title: "ThreadStartParams",
    type: "object"
  },
  ThreadResumeParams: {
    properties: {
      approvalPolicy: {anyOf: [{"$ref": "#/definitions/AskForApproval"}, {type: "null"}]},
      approvalsReviewer: {anyOf: [{"$ref": "#/definitions/ApprovalsReviewer"}, {type: "null"}]},
      baseInstructions: {type: ["string", "null"]},
      config: {additionalProperties: true, type: ["object", "null"]},
      cwd: {type: ["string", "null"]},
      developerInstructions: {type: ["string", "null"]},
      excludeTurns: {type: "boolean"},
      model: {type: ["string", "null"]},
      modelProvider: {type: ["string", "null"]},
      personality: {anyOf: [{"$ref": "#/definitions/Personality"}, {type: "null"}]},
      sandbox: {anyOf: [{"$ref": "#/definitions/SandboxMode"}, {type: "null"}]},
      serviceTier: {type: ["string", "null"]},
      threadId: {type: "string"}
    },
    required: ["threadId"],
    title: "ThreadResumeParams",
    type: "object"
  },
  ThreadStartResponse: {
    properties: {
      approvalPolicy: {"$ref": "#/definitions/AskForApproval"},
      approvalsReviewer: {allOf: [{"$ref": "#/definitions/ApprovalsReviewer"}]},
      cwd: {"$ref": "#/definitions/AbsolutePathBuf"},
      model: {type: "string"},
      modelProvider: {type: "string"},
      sandbox: {allOf: [{"$ref": "#/definitions/SandboxPolicy"}]},
      serviceTier: {type: ["string", "null"]},
      thread: {"$ref": "#/definitions/Thread"}
    },
    required: ["approvalPolicy", "approvalsReviewer", "cwd", "model", "modelProvider", "sandbox", "thread"],
    title: "ThreadStartResponse",
    type: "object"
  },
  ThreadResumeResponse: {
    properties: {
      approvalPolicy: {"$ref": "#/definitions/AskForApproval"},
      approvalsReviewer: {allOf: [{"$ref": "#/definitions/ApprovalsReviewer"}]},
      cwd: {"$ref": "#/definitions/AbsolutePathBuf"},
      model: {type: "string"},
      modelProvider: {type: "string"},
      sandbox: {allOf: [{"$ref": "#/definitions/SandboxPolicy"}]},
      thread: {"$ref": "#/definitions/Thread"}
    },
    required: ["approvalPolicy", "approvalsReviewer", "cwd", "model", "modelProvider", "sandbox", "thread"],
    title: "ThreadResumeResponse",
    type: "object"
  },
  Thread: {
    properties: {
      createdAt: {type: "integer"},
      cwd: {allOf: [{"$ref": "#/definitions/AbsolutePathBuf"}]},
      ephemeral: {type: "boolean"},
      id: {type: "string"},
      model: {type: ["string", "null"]},
      modelProvider: {type: "string"},
      preview: {type: "string"},
      status: {"$ref": "#/definitions/ThreadStatus"},
      name: {type: ["string", "null"]},
      updatedAt: {type: "integer"},
      forkedFromId: {type: ["string", "null"]},
      parentThreadId: {type: ["string", "null"]},
      source: {}
    },
    required: ["createdAt", "cwd", "ephemeral", "id", "modelProvider", "preview", "status", "source", "updatedAt"],
    type: "object"
  },
  ThreadStatus: {
    oneOf: [
      {properties: {type: {enum: ["notLoaded"], type: "string"}}, required: ["type"], type: "object"},
      {properties: {type: {enum: ["idle"], type: "string"}}, required: ["type"], type: "object"},
      {properties: {type: {enum: ["systemError"], type: "string"}}, required: ["type"], type: "object"},
      {
        properties: {activeFlags: {items: {type: "string"}, type: "array"}, type: {enum: ["active"], type: "string"}},
        required: ["activeFlags", "type"],
        type: "object"
      }
    ]
  },
  ThreadReadParams: {
    properties: {includeTurns: {type: "boolean"}, threadId: {type: "string"}},
    required: ["threadId"],
    title: "ThreadReadParams",
    type: "object"
  },
  ThreadReadResponse: {
    properties: {thread: {"$ref": "#/definitions/Thread"}},
    required: ["thread"],
    title: "ThreadReadResponse",
    type: "object"
  },
  AskForApproval: {
    oneOf: [
      {enum: ["untrusted", "on-request", "never"], type: "string"},
      {
        additionalProperties: false,
        properties: {granular: {type: "object"}},
        required: ["granular"],
        title: "GranularAskForApproval",
        type: "object"
      }
    ]
  },
  ApprovalsReviewer: {enum: ["user", "auto_review", "guardian_subagent"], type: "string"},
  SandboxMode: {enum: ["read-only", "workspace-write", "danger-full-access"], type: "string"},
  Personality: {enum: ["none", "friendly", "pragmatic"], type: "string"},
  SandboxPolicy: {
    oneOf: [
      {
        properties: {
          type: {enum: ["dangerFullAccess"], title: "DangerFullAccessSandboxPolicyType", type: "string"}
        },
        required: ["type"],
        title: "DangerFullAccessSandboxPolicy",
        type: "object"
      },
      {
        properties: {
          networkAccess: {type: "boolean"},
          type: {enum: ["readOnly"], title: "ReadOnlySandboxPolicyType", type: "string"}
        },
        required: ["type"],
        title: "ReadOnlySandboxPolicy",
        type: "object"
      },
      {"properties": {"excludeSlashTmp": {"default": false, "type": "boolean"}, "excludeTmpdirEnvVar": {"default": false, "type": "boolean"}, "networkAccess": {"default": false, "type": "boolean"}, "type": {"enum": ["workspaceWrite"], "title": "WorkspaceWriteSandboxPolicyType", "type": "string"}, "writableRoots": {"default": [], "items": {"$ref": "#/definitions/AbsolutePathBuf"}, "type": "array"}}, "required": ["type"], "title": "WorkspaceWriteSandboxPolicy", "type": "object"}
    ]
  },
  TurnStartParams: {
    properties: {
      approvalPolicy: {anyOf: [{"$ref": "#/definitions/AskForApproval"}, {type: "null"}]},
      approvalsReviewer: {anyOf: [{"$ref": "#/definitions/ApprovalsReviewer"}, {type: "null"}]},
      collaborationMode: {anyOf: [{}, {type: "null"}]},
      cwd: {type: ["string", "null"]},
      effort: {anyOf: [{}, {type: "null"}]},
      sandboxPolicy: {anyOf: [{}, {type: "null"}]},
      input: {items: {"$ref": "#/definitions/UserInput"}, type: "array"},
      model: {type: ["string", "null"]},
      personality: {anyOf: [{"$ref": "#/definitions/Personality"}, {type: "null"}]},
      serviceTier: {type: ["string", "null"]},
      threadId: {type: "string"}
    },
    required: ["input", "threadId"],
    title: "TurnStartParams",
    type: "object"
  },
  UserInput: {
    oneOf: [
      {
        properties: {
          text: {type: "string"},
          text_elements: {items: {}, type: "array"},
          type: {enum: ["text"], title: "TextUserInputType", type: "string"}
        },
        required: ["text", "type"],
        title: "TextUserInput",
        type: "object"
      },
      {
        anyOf: [
          {properties: {url: {type: "string"}}, required: ["url"], title: "UrlUserInput", type: "object"},
          {
            properties: {fileId: {type: "string"}},
            required: ["fileId"],
            title: "FileIdUserInput",
            type: "object"
          }
        ],
        properties: {
          detail: {anyOf: [{}, {type: "null"}]},
          type: {enum: ["image"], title: "ImageUserInputType", type: "string"}
        },
        required: ["type"],
        title: "ImageUserInput",
        type: "object"
      },
      {
        properties: {
          detail: {anyOf: [{}, {type: "null"}]},
          path: {type: "string"},
          type: {enum: ["localImage"], title: "LocalImageUserInputType", type: "string"}
        },
        required: ["path", "type"],
        title: "LocalImageUserInput",
        type: "object"
      }
    ]
  },
  TurnStartResponse: {
    properties: {turn: {"$ref": "#/definitions/Turn"}},
    required: ["turn"],
    title: "TurnStartResponse",
    type: "object"
  },
  Turn: {
    properties: {
      error: {anyOf: [{"$ref": "#/definitions/TurnError"}, {type: "null"}]},
      id: {type: "string"},
      items: {items: {"$ref": "#/definitions/ThreadItem"}, type: "array"},
      startedAt: {type: ["integer", "null"]},
      status: {"$ref": "#/definitions/TurnStatus"}
    },
    required: ["id", "items", "status"],
    type: "object"
  },
  TurnStatus: {enum: ["completed", "interrupted", "failed", "inProgress"], type: "string"},
  TurnError: {
    properties: {
      additionalDetails: {type: ["string", "null"]},
      codexErrorInfo: {anyOf: [{}, {type: "null"}]},
      message: {type: "string"}
    },
    required: ["message"],
    type: "object"
  },
  ThreadItem: {
    oneOf: [
      {"properties": {"clientId": {"type": ["string", "null"]}, "content": {"items": {"$ref": "#/definitions/UserInput"}, "type": "array"}, "id": {"type": "string"}, "type": {"enum": ["userMessage"], "title": "UserMessageThreadItemType", "type": "string"}}, "required": ["content", "id", "type"], "title": "UserMessageThreadItem", "type": "object"},
      {"properties": {"fragments": {"items": {}, "type": "array"}, "id": {"type": "string"}, "type": {"enum": ["hookPrompt"], "title": "HookPromptThreadItemType", "type": "string"}}, "required": ["fragments", "id", "type"], "title": "HookPromptThreadItem", "type": "object"},
      {"properties": {"delivery": {"anyOf": [{}, {"type": "null"}]}, "id": {"type": "string"}, "memoryCitation": {"anyOf": [{}, {"type": "null"}]}, "moderation": {"anyOf": [{}, {"type": "null"}]}, "phase": {"anyOf": [{}, {"type": "null"}]}, "questions": {"items": {}, "type": ["array", "null"]}, "text": {"type": "string"}, "type": {"enum": ["agentMessage"], "title": "AgentMessageThreadItemType", "type": "string"}}, "required": ["id", "text", "type"], "title": "AgentMessageThreadItem", "type": "object"},
      {"properties": {"id": {"type": "string"}, "name": {"type": "string"}, "namespace": {"type": ["string", "null"]}, "output": {}, "type": {"enum": ["functionCallOutput"], "title": "FunctionCallOutputThreadItemType", "type": "string"}}, "required": ["id", "name", "output", "type"], "title": "FunctionCallOutputThreadItem", "type": "object"},
      {"properties": {"id": {"type": "string"}, "text": {"type": "string"}, "type": {"enum": ["plan"], "title": "PlanThreadItemType", "type": "string"}}, "required": ["id", "text", "type"], "title": "PlanThreadItem", "type": "object"},
      {"properties": {"content": {"items": {"type": "string"}, "type": "array"}, "id": {"type": "string"}, "summary": {"items": {"type": "string"}, "type": "array"}, "type": {"enum": ["reasoning"], "title": "ReasoningThreadItemType", "type": "string"}}, "required": ["id", "type"], "title": "ReasoningThreadItem", "type": "object"},
      {"properties": {"aggregatedOutput": {"type": ["string", "null"]}, "command": {"type": "string"}, "commandActions": {"items": {}, "type": "array"}, "cwd": {"$ref": "#/definitions/LegacyAppPathString"}, "durationMs": {"type": ["integer", "null"]}, "exitCode": {"type": ["integer", "null"]}, "id": {"type": "string"}, "pluginId": {"type": ["string", "null"]}, "processId": {"type": ["string", "null"]}, "scriptPath": {"type": ["string", "null"]}, "source": {}, "status": {}, "type": {"enum": ["commandExecution"], "title": "CommandExecutionThreadItemType", "type": "string"}}, "required": ["command", "commandActions", "cwd", "id", "status", "type"], "title": "CommandExecutionThreadItem", "type": "object"},
      {"properties": {"changes": {"items": {}, "type": "array"}, "id": {"type": "string"}, "status": {}, "type": {"enum": ["fileChange"], "title": "FileChangeThreadItemType", "type": "string"}}, "required": ["changes", "id", "status", "type"], "title": "FileChangeThreadItem", "type": "object"},
      {"properties": {"appContext": {"anyOf": [{}, {"type": "null"}]}, "arguments": true, "durationMs": {"type": ["integer", "null"]}, "environmentId": {"type": ["string", "null"]}, "error": {"anyOf": [{}, {"type": "null"}]}, "id": {"type": "string"}, "mcpAppResourceUri": {"type": ["string", "null"]}, "mcpAppUi": {"anyOf": [{}, {"type": "null"}]}, "pluginId": {"type": ["string", "null"]}, "readOnlyHint": {"type": ["boolean", "null"]}, "result": {"anyOf": [{}, {"type": "null"}]}, "server": {"type": "string"}, "status": {}, "tool": {"type": "string"}, "type": {"enum": ["mcpToolCall"], "title": "McpToolCallThreadItemType", "type": "string"}}, "required": ["arguments", "id", "server", "status", "tool", "type"], "title": "McpToolCallThreadItem", "type": "object"},
      {"properties": {"arguments": true, "contentItems": {"items": {"$ref": "#/definitions/DynamicToolCallOutputContentItem"}, "type": ["array", "null"]}, "durationMs": {"type": ["integer", "null"]}, "id": {"type": "string"}, "namespace": {"type": ["string", "null"]}, "status": {"$ref": "#/definitions/DynamicToolCallStatus"}, "success": {"type": ["boolean", "null"]}, "tool": {"type": "string"}, "type": {"enum": ["dynamicToolCall"], "title": "DynamicToolCallThreadItemType", "type": "string"}}, "required": ["arguments", "id", "status", "tool", "type"], "title": "DynamicToolCallThreadItem", "type": "object"},
      {"properties": {"agentsStates": {"additionalProperties": {}, "type": "object"}, "id": {"type": "string"}, "model": {"type": ["string", "null"]}, "prompt": {"type": ["string", "null"]}, "reasoningEffort": {"anyOf": [{}, {"type": "null"}]}, "receiverThreadIds": {"items": {"type": "string"}, "type": "array"}, "senderThreadId": {"type": "string"}, "status": {}, "tool": {}, "type": {"enum": ["collabAgentToolCall"], "title": "CollabAgentToolCallThreadItemType", "type": "string"}}, "required": ["agentsStates", "id", "receiverThreadIds", "senderThreadId", "status", "tool", "type"], "title": "CollabAgentToolCallThreadItem", "type": "object"},
      {"properties": {"agentPath": {"type": "string"}, "agentThreadId": {"type": "string"}, "id": {"type": "string"}, "kind": {}, "model": {"type": ["string", "null"]}, "reasoningEffort": {"anyOf": [{}, {"type": "null"}]}, "type": {"enum": ["subAgentActivity"], "title": "SubAgentActivityThreadItemType", "type": "string"}}, "required": ["agentPath", "agentThreadId", "id", "kind", "type"], "title": "SubAgentActivityThreadItem", "type": "object"},
      {"properties": {"action": {"anyOf": [{}, {"type": "null"}]}, "id": {"type": "string"}, "query": {"type": "string"}, "results": {"items": true, "type": ["array", "null"]}, "type": {"enum": ["webSearch"], "title": "WebSearchThreadItemType", "type": "string"}}, "required": ["id", "query", "type"], "title": "WebSearchThreadItem", "type": "object"},
      {"properties": {"id": {"type": "string"}, "path": {"$ref": "#/definitions/LegacyAppPathString"}, "type": {"enum": ["imageView"], "title": "ImageViewThreadItemType", "type": "string"}}, "required": ["id", "path", "type"], "title": "ImageViewThreadItem", "type": "object"},
      {"properties": {"durationMs": {"type": "integer"}, "id": {"type": "string"}, "type": {"enum": ["sleep"], "title": "SleepThreadItemType", "type": "string"}}, "required": ["durationMs", "id", "type"], "title": "SleepThreadItem", "type": "object"},
      {"anyOf": [{"properties": {"fileId": {"type": "string"}}, "required": ["fileId"], "title": "FileIdThreadItem", "type": "object"}, {"properties": {"result": {"type": "string"}}, "required": ["result"], "title": "ResultThreadItem", "type": "object"}], "properties": {"failure": {"anyOf": [{}, {"type": "null"}]}, "generationId": {"type": ["string", "null"]}, "id": {"type": "string"}, "inputImages": {"items": {}, "type": "array"}, "revisedPrompt": {"type": ["string", "null"]}, "savedPath": {"anyOf": [{"$ref": "#/definitions/AbsolutePathBuf"}, {"type": "null"}]}, "status": {"type": "string"}, "transparentBackground": {"type": ["boolean", "null"]}, "type": {"enum": ["imageGeneration"], "title": "ImageGenerationThreadItemType", "type": "string"}}, "required": ["id", "status", "type"], "title": "ImageGenerationThreadItem", "type": "object"},
      {"properties": {"id": {"type": "string"}, "review": {"type": "string"}, "type": {"enum": ["enteredReviewMode"], "title": "EnteredReviewModeThreadItemType", "type": "string"}}, "required": ["id", "review", "type"], "title": "EnteredReviewModeThreadItem", "type": "object"},
      {"properties": {"id": {"type": "string"}, "review": {"type": "string"}, "type": {"enum": ["exitedReviewMode"], "title": "ExitedReviewModeThreadItemType", "type": "string"}}, "required": ["id", "review", "type"], "title": "ExitedReviewModeThreadItem", "type": "object"},
      {"properties": {"id": {"type": "string"}, "type": {"enum": ["contextCompaction"], "title": "ContextCompactionThreadItemType", "type": "string"}}, "required": ["id", "type"], "title": "ContextCompactionThreadItem", "type": "object"}
    ],
    properties: {completedAtMs: {type: ["integer", "null"]}, startedAtMs: {type: ["integer", "null"]}},
    type: "object"
  },
  DynamicToolCallStatus: {enum: ["inProgress", "completed", "failed"], type: "string"},
  TurnInterruptParams: {
    properties: {threadId: {type: "string"}, turnId: {type: "string"}},
    required: ["threadId", "turnId"],
    title: "TurnInterruptParams",
    type: "object"
  },
  TurnInterruptResponse: {title: "TurnInterruptResponse", type: "object"},
  TurnSteerParams: {
    properties: {
      expectedTurnId: {type: "string"},
      input: {items: {"$ref": "#/definitions/UserInput"}, type: "array"},
      threadId: {type: "string"}
    },
    required: ["expectedTurnId", "input", "threadId"],
    title: "TurnSteerParams",
    type: "object"
  },
  TurnSteerResponse: {properties: {turnId: {type: "string"}}, required: ["turnId"], title: "TurnSteerResponse", type: "object"},
  ThreadCompactStartParams: {
    properties: {threadId: {type: "string"}},
    required: ["threadId"],
    title: "ThreadCompactStartParams",
    type: "object"
  },
  ThreadCompactStartResponse: {title: "ThreadCompactStartResponse", type: "object"},
  ThreadListParams: {
    properties: {
      ancestorThreadId: {type: ["string", "null"]},
      archived: {type: ["boolean", "null"]},
      cursor: {type: ["string", "null"]},
      includedThreadIds: {items: {type: "string"}, type: ["array", "null"]},
      limit: {format: "uint32", minimum: 0, type: ["integer", "null"]},
      modelProviders: {items: {type: "string"}, type: ["array", "null"]},
      parentThreadId: {type: ["string", "null"]},
      searchTerm: {type: ["string", "null"]},
      sourceKinds: {items: {"$ref": "#/definitions/ThreadSourceKind"}, type: ["array", "null"]}
    },
    title: "ThreadListParams",
    type: "object"
  },
  ThreadSourceKind: {
    enum: ["cli", "vscode", "exec", "appServer", "subAgent", "subAgentReview", "subAgentCompact", "subAgentThreadSpawn", "subAgentOther", "unknown"],
    type: "string"
  },
  ThreadListResponse: {
    properties: {
      data: {items: {"$ref": "#/definitions/Thread"}, type: "array"},
      nextCursor: {type: ["string", "null"]}
    },
    required: ["data"],
    title: "ThreadListResponse",
    type: "object"
  },
  ThreadTurnsListParams: {
    properties: {
      cursor: {type: ["string", "null"]},
      itemsView: {anyOf: [{oneOf: [{enum: ["notLoaded"], type: "string"}, {enum: ["summary"], type: "string"}, {enum: ["full"], type: "string"}]}, {type: "null"}]},
      limit: {type: ["integer", "null"]},
      sortDirection: {anyOf: [{enum: ["asc", "desc"], type: "string"}, {type: "null"}]},
      threadId: {type: "string"}
    },
    required: ["threadId"],
    title: "ThreadTurnsListParams",
    type: "object"
  },
  ThreadTurnsListResponse: {
    properties: {
      data: {items: {"$ref": "#/definitions/Turn"}, type: "array"},
      nextCursor: {type: ["string", "null"]}
    },
    required: ["data"],
    title: "ThreadTurnsListResponse",
    type: "object"
  },
  ThreadForkParams: {
    properties: {
      ephemeral: {type: "boolean"},
      excludeTurns: {type: "boolean"},
      lastTurnId: {type: ["string", "null"]},
      model: {type: ["string", "null"]},
      modelProvider: {type: ["string", "null"]},
      threadId: {type: "string"}
    },
    required: ["threadId"],
    title: "ThreadForkParams",
    type: "object"
  },
  ThreadForkResponse: {
    properties: {
      approvalPolicy: {"$ref": "#/definitions/AskForApproval"},
      cwd: {"$ref": "#/definitions/AbsolutePathBuf"},
      model: {type: "string"},
      modelProvider: {type: "string"},
      sandbox: {allOf: [{"$ref": "#/definitions/SandboxPolicy"}]},
      thread: {"$ref": "#/definitions/Thread"}
    },
    required: ["approvalPolicy", "cwd", "model", "modelProvider", "sandbox", "thread"],
    title: "ThreadForkResponse",
    type: "object"
  },
  ThreadInjectItemsParams: {
    properties: {items: {items: true, type: "array"}, threadId: {type: "string"}},
    required: ["items", "threadId"],
    title: "ThreadInjectItemsParams",
    type: "object"
  },
  ThreadInjectItemsResponse: {title: "ThreadInjectItemsResponse", type: "object"},
  ThreadArchiveParams: {
    properties: {threadId: {type: "string"}},
    required: ["threadId"],
    title: "ThreadArchiveParams",
    type: "object"
  },
  ThreadArchiveResponse: {title: "ThreadArchiveResponse", type: "object"},
  ThreadDeleteParams: {
    properties: {threadId: {type: "string"}},
    required: ["threadId"],
    title: "ThreadDeleteParams",
    type: "object"
  },
  ThreadDeleteResponse: {title: "ThreadDeleteResponse", type: "object"},
  ThreadUnsubscribeParams: {
    properties: {threadId: {type: "string"}},
    required: ["threadId"],
    title: "ThreadUnsubscribeParams",
    type: "object"
  },
  ThreadUnsubscribeResponse: {
    properties: {status: {"$ref": "#/definitions/ThreadUnsubscribeStatus"}},
    required: ["status"],
    title: "ThreadUnsubscribeResponse",
    type: "object"
  },
  PluginInstalledParams: {
    properties: {cwds: {items: {type: "string"}, type: ["array", "null"]}},
    title: "PluginInstalledParams",
    type: "object"
  },
  PluginSummaryFab: {
    properties: {id: {type: "string"}, name: {type: "string"}, installed: {type: "boolean"}, enabled: {type: "boolean"}},
    required: ["enabled", "id", "installed", "name"],
    type: "object"
  },
  PluginInstalledResponse: {
    properties: {
      marketplaces: {
        items: {
          properties: {
            name: {type: "string"},
            path: {type: ["string", "null"]},
            plugins: {items: {"$ref": "#/definitions/PluginSummaryFab"}, type: "array"}
          },
          required: ["name", "plugins"],
          type: "object"
        },
        type: "array"
      },
      marketplaceLoadErrors: {
        items: {properties: {marketplacePath: {type: "string"}, message: {type: "string"}}, required: ["marketplacePath", "message"], type: "object"},
        type: "array"
      }
    },
    required: ["marketplaces"],
    title: "PluginInstalledResponse",
    type: "object"
  },
  PluginReadParams: {
    properties: {pluginName: {type: "string"}, marketplacePath: {type: ["string", "null"]}, remoteMarketplaceName: {type: ["string", "null"]}},
    required: ["pluginName"],
    title: "PluginReadParams",
    type: "object"
  },
  PluginReadResponse: {
    properties: {
      plugin: {
        properties: {
          marketplaceName: {type: "string"},
          marketplacePath: {type: ["string", "null"]},
          summary: {"$ref": "#/definitions/PluginSummaryFab"},
          apps: {items: {properties: {id: {type: "string"}, name: {type: "string"}}, required: ["id", "name"], type: "object"}, type: "array"}
        },
        required: ["apps", "marketplaceName", "summary"],
        type: "object"
      }
    },
    required: ["plugin"],
    title: "PluginReadResponse",
    type: "object"
  },
  AppsInstalledParams: {
    properties: {threadId: {type: ["string", "null"]}, forceRefresh: {type: "boolean"}},
    title: "AppsInstalledParams",
    type: "object"
  },
  AppsInstalledResponse: {
    properties: {
      apps: {
        items: {
          properties: {id: {type: "string"}, enabled: {type: "boolean"}, callable: {type: "boolean"}, runtimeName: {type: ["string", "null"]}},
          required: ["callable", "enabled", "id"],
          type: "object"
        },
        type: "array"
      }
    },
    required: ["apps"],
    title: "AppsInstalledResponse",
    type: "object"
  },
  // S36, as 0.171.0 generates them (--experimental for server/diagnostics)
  FeedbackUploadParams: {
    properties: {
      classification: {type: "string"},
      extraLogFiles: {items: {type: "string"}, type: ["array", "null"]},
      includeLogs: {type: "boolean"},
      reason: {type: ["string", "null"]},
      tags: {additionalProperties: {type: "string"}, type: ["object", "null"]},
      threadId: {type: ["string", "null"]}
    },
    required: ["classification"],
    title: "FeedbackUploadParams",
    type: "object"
  },
  FeedbackUploadResponse: {
    properties: {promptHash: {default: null, type: ["string", "null"]}, threadId: {type: "string"}},
    required: ["threadId"],
    title: "FeedbackUploadResponse",
    type: "object"
  },
  ServerDiagnosticsParams: {title: "ServerDiagnosticsParams", type: "object"},
  ServerDiagnosticsResponse: {
    properties: {
      gauges: {
        items: {properties: {name: {type: "string"}, value: {format: "uint64", minimum: 0, type: "integer"}}, required: ["name", "value"], type: "object"},
        type: "array"
      },
      process: {
        properties: {
          id: {format: "uint32", minimum: 0, type: "integer"},
          physicalFootprintBytes: {format: "uint64", minimum: 0, type: ["integer", "null"]},
          residentMemoryBytes: {format: "uint64", minimum: 0, type: ["integer", "null"]}
        },
        required: ["id"],
        type: "object"
      }
    },
    required: ["gauges", "process"],
    title: "ServerDiagnosticsResponse",
    type: "object"
  },
  ThreadUnsubscribeStatus: {enum: ["notLoaded", "notSubscribed", "unsubscribed"], type: "string"},
  ThreadStartedNotification: {
    properties: {thread: {"$ref": "#/definitions/Thread"}},
    required: ["thread"],
    title: "ThreadStartedNotification",
    type: "object"
  },
  ThreadStatusChangedNotification: {
    properties: {status: {"$ref": "#/definitions/ThreadStatus"}, threadId: {type: "string"}},
    required: ["status", "threadId"],
    type: "object"
  },
  ThreadArchivedNotification: {properties: {threadId: {type: "string"}}, required: ["threadId"], type: "object"},
  ThreadClosedNotification: {properties: {threadId: {type: "string"}}, required: ["threadId"], type: "object"},
  HookStartedNotification: {
    properties: {run: {"$ref": "#/definitions/HookRunSummary"}, threadId: {type: "string"}, turnId: {type: ["string", "null"]}},
    required: ["run", "threadId"],
    type: "object"
  },
  HookCompletedNotification: {
    properties: {run: {"$ref": "#/definitions/HookRunSummary"}, threadId: {type: "string"}, turnId: {type: ["string", "null"]}},
    required: ["run", "threadId"],
    type: "object"
  },
  HookRunSummary: {
    properties: {
      completedAt: {format: "int64", type: ["integer", "null"]},
      eventName: {"$ref": "#/definitions/HookEventName"},
      id: {type: "string"},
      startedAt: {format: "int64", type: "integer"},
      status: {"$ref": "#/definitions/HookRunStatus"},
      statusMessage: {type: ["string", "null"]}
    },
    required: ["eventName", "id", "startedAt", "status"],
    type: "object"
  },
  HookEventName: {enum: ["preToolUse", "permissionRequest", "postToolUse", "sessionStart", "userPromptSubmit", "stop"], type: "string"},
  HookRunStatus: {enum: ["running", "completed", "failed", "blocked", "stopped"], type: "string"},
  TurnStartedNotification: {
    properties: {threadId: {type: "string"}, turn: {"$ref": "#/definitions/Turn"}},
    required: ["threadId", "turn"],
    title: "TurnStartedNotification",
    type: "object"
  },
  TurnCompletedNotification: {
    properties: {threadId: {type: "string"}, turn: {"$ref": "#/definitions/Turn"}},
    required: ["threadId", "turn"],
    title: "TurnCompletedNotification",
    type: "object"
  },
  ItemStartedNotification: {
    properties: {
      item: {"$ref": "#/definitions/ThreadItem"},
      startedAtMs: {type: "integer"},
      threadId: {type: "string"},
      turnId: {type: "string"}
    },
    required: ["item", "startedAtMs", "threadId", "turnId"],
    title: "ItemStartedNotification",
    type: "object"
  },
  ItemCompletedNotification: {
    properties: {
      completedAtMs: {type: "integer"},
      contentTokenCount: {type: ["integer", "null"]},
      item: {"$ref": "#/definitions/ThreadItem"},
      threadId: {type: "string"},
      turnId: {type: "string"}
    },
    required: ["completedAtMs", "item", "threadId", "turnId"],
    title: "ItemCompletedNotification",
    type: "object"
  },
  AgentMessageDeltaNotification: {
    properties: {
      delta: {type: "string"},
      itemId: {type: "string"},
      threadId: {type: "string"},
      turnId: {type: "string"}
    },
    required: ["delta", "itemId", "threadId", "turnId"],
    title: "AgentMessageDeltaNotification",
    type: "object"
  },
  ServerRequestResolvedNotification: {
    properties: {
      requestId: {anyOf: [{type: "string"}, {format: "int64", type: "integer"}]},
      threadId: {type: "string"}
    },
    required: ["requestId", "threadId"],
    title: "ServerRequestResolvedNotification",
    type: "object"
  },
  ThreadTokenUsageUpdatedNotification: {
    properties: {threadId: {type: "string"}, tokenUsage: {"$ref": "#/definitions/ThreadTokenUsage"}, turnId: {type: "string"}},
    required: ["threadId", "tokenUsage", "turnId"],
    title: "ThreadTokenUsageUpdatedNotification",
    type: "object"
  },
  ThreadTokenUsage: {
    properties: {
      last: {"$ref": "#/definitions/TokenUsageBreakdown"},
      modelContextWindow: {type: ["integer", "null"]},
      total: {"$ref": "#/definitions/TokenUsageBreakdown"}
    },
    required: ["last", "total"],
    type: "object"
  },
  TokenUsageBreakdown: {
    properties: {
      cacheWriteInputTokens: {type: "integer"},
      cachedInputTokens: {type: "integer"},
      inputTokens: {type: "integer"},
      outputTokens: {type: "integer"},
      reasoningOutputTokens: {type: "integer"},
      totalTokens: {type: "integer"}
    },
    required: ["cachedInputTokens", "inputTokens", "outputTokens", "reasoningOutputTokens", "totalTokens"],
    type: "object"
  },
  McpServerStatusUpdatedNotification: {
    properties: {
      environmentId: {type: ["string", "null"]},
      error: {type: ["string", "null"]},
      failureReason: {anyOf: [{}, {type: "null"}]},
      name: {type: "string"},
      status: {enum: ["starting", "ready", "failed", "cancelled"], type: "string"},
      threadId: {type: ["string", "null"]}
    },
    required: ["name", "status"],
    title: "McpServerStatusUpdatedNotification",
    type: "object"
  },
  ErrorNotification: {
    properties: {
      error: {"$ref": "#/definitions/TurnError"},
      threadId: {type: "string"},
      turnId: {type: "string"},
      willRetry: {type: "boolean"}
    },
    required: ["error", "threadId", "turnId", "willRetry"],
    title: "ErrorNotification",
    type: "object"
  },
  CommandExecutionRequestApprovalParams: {
    properties: {
      command: {type: ["string", "null"]},
      cwd: {anyOf: [{"$ref": "#/definitions/LegacyAppPathString"}, {type: "null"}]},
      itemId: {type: "string"},
      reason: {type: ["string", "null"]},
      startedAtMs: {format: "int64", type: "integer"},
      threadId: {type: "string"},
      turnId: {type: "string"}
    },
    required: ["itemId", "startedAtMs", "threadId", "turnId"],
    type: "object"
  },
  LegacyAppPathString: {type: "string"},
  CommandExecutionRequestApprovalResponse: {
    properties: {decision: {"$ref": "#/definitions/CommandExecutionApprovalDecision"}},
    required: ["decision"],
    title: "CommandExecutionRequestApprovalResponse",
    type: "object"
  },
  CommandExecutionApprovalDecision: {
    oneOf: [
      {enum: ["accept"], type: "string"},
      {enum: ["acceptForSession"], type: "string"},
      {
        additionalProperties: false,
        properties: {acceptWithExecpolicyAmendment: {type: "object"}},
        required: ["acceptWithExecpolicyAmendment"],
        title: "AcceptWithExecpolicyAmendmentCommandExecutionApprovalDecision",
        type: "object"
      },
      {enum: ["decline"], type: "string"},
      {enum: ["cancel"], type: "string"}
    ]
  },
  FileChangeRequestApprovalParams: {
    properties: {
      grantRoot: {type: ["string", "null"]},
      itemId: {type: "string"},
      reason: {type: ["string", "null"]},
      startedAtMs: {format: "int64", type: "integer"},
      threadId: {type: "string"},
      turnId: {type: "string"}
    },
    required: ["itemId", "startedAtMs", "threadId", "turnId"],
    type: "object"
  },
  FileChangeRequestApprovalResponse: {
    properties: {decision: {"$ref": "#/definitions/FileChangeApprovalDecision"}},
    required: ["decision"],
    title: "FileChangeRequestApprovalResponse",
    type: "object"
  },
  FileChangeApprovalDecision: {
    oneOf: [
      {enum: ["accept"], type: "string"},
      {enum: ["acceptForSession"], type: "string"},
      {enum: ["decline"], type: "string"},
      {enum: ["cancel"], type: "string"}
    ]
  },
  PermissionsRequestApprovalParams: {
    properties: {
      cwd: {"$ref": "#/definitions/LegacyAppPathString"},
      itemId: {type: "string"},
      permissions: {"$ref": "#/definitions/RequestPermissionProfile"},
      reason: {type: ["string", "null"]},
      startedAtMs: {format: "int64", type: "integer"},
      threadId: {type: "string"},
      turnId: {type: "string"}
    },
    required: ["cwd", "itemId", "permissions", "startedAtMs", "threadId", "turnId"],
    type: "object"
  },
  RequestPermissionProfile: {
    additionalProperties: false,
    properties: {fileSystem: {anyOf: [{}, {type: "null"}]}, network: {anyOf: [{}, {type: "null"}]}},
    type: "object"
  },
  PermissionsRequestApprovalResponse: {
    properties: {
      permissions: {"$ref": "#/definitions/GrantedPermissionProfile"},
      scope: {allOf: [{"$ref": "#/definitions/PermissionGrantScope"}], default: "turn"},
      strictAutoReview: {type: ["boolean", "null"]}
    },
    required: ["permissions"],
    title: "PermissionsRequestApprovalResponse",
    type: "object"
  },
  GrantedPermissionProfile: {
    properties: {fileSystem: {anyOf: [{}, {type: "null"}]}, network: {anyOf: [{}, {type: "null"}]}},
    type: "object"
  },
  PermissionGrantScope: {enum: ["turn", "session"], type: "string"},
  DynamicToolCallParams: {
    properties: {
      arguments: true,
      callId: {type: "string"},
      namespace: {type: ["string", "null"]},
      threadId: {type: "string"},
      tool: {type: "string"},
      turnId: {type: "string"}
    },
    required: ["arguments", "callId", "threadId", "tool", "turnId"],
    type: "object"
  },
  DynamicToolCallResponse: {
    properties: {
      contentItems: {items: {"$ref": "#/definitions/DynamicToolCallOutputContentItem"}, type: "array"},
      success: {type: "boolean"}
    },
    required: ["contentItems", "success"],
    title: "DynamicToolCallResponse",
    type: "object"
  },
  DynamicToolCallOutputContentItem: {
    oneOf: [
      {
        properties: {text: {type: "string"}, type: {enum: ["inputText"], type: "string"}},
        required: ["text", "type"],
        title: "InputTextDynamicToolCallOutputContentItem",
        type: "object"
      },
      {
        properties: {imageUrl: {type: "string"}, type: {enum: ["inputImage"], type: "string"}},
        required: ["imageUrl", "type"],
        title: "InputImageDynamicToolCallOutputContentItem",
        type: "object"
      },
      {
        properties: {audioUrl: {type: "string"}, type: {enum: ["inputAudio"], type: "string"}},
        required: ["audioUrl", "type"],
        title: "InputAudioDynamicToolCallOutputContentItem",
        type: "object"
      }
    ]
  },
  ToolRequestUserInputParams: {
    properties: {
      isBlocking: {type: "boolean"},
      itemId: {type: "string"},
      questions: {items: {}, type: "array"},
      threadId: {type: "string"},
      turnId: {type: "string"}
    },
    required: ["isBlocking", "itemId", "questions", "threadId", "turnId"],
    type: "object"
  },
  ToolRequestUserInputResponse: {
    properties: {answers: {additionalProperties: {"$ref": "#/definitions/ToolRequestUserInputAnswer"}, type: "object"}},
    required: ["answers"],
    title: "ToolRequestUserInputResponse",
    type: "object"
  },
  ToolRequestUserInputAnswer: {
    properties: {answers: {items: {type: "string"}, type: "array"}},
    required: ["answers"],
    type: "object"
  },
  McpServerElicitationRequestParams: {
    oneOf: [
      {properties: {_meta: true, mode: {enum: ["form"], type: "string"}}, required: ["mode"], type: "object"},
      {
        properties: {_meta: true, mode: {enum: ["url"], type: "string"}, url: {type: "string"}},
        required: ["mode", "url"],
        type: "object"
      }
    ],
    properties: {
      serverName: {type: "string"},
      threadId: {type: "string"},
      turnId: {type: ["string", "null"]}
    },
    required: ["serverName", "threadId"],
    type: "object"
  },
  McpServerElicitationRequestResponse: {
    properties: {_meta: {}, action: {"$ref": "#/definitions/McpServerElicitationAction"}, content: {}},
    required: ["action"],
    title: "McpServerElicitationRequestResponse",
    type: "object"
  },
  McpServerElicitationAction: {enum: ["accept", "decline", "cancel"], type: "string"},
  // S26, as 0.171.0 generates them (--experimental; descriptions left out)
  TurnEnvironmentParams: {"properties": {"cwd": {"$ref": "#/definitions/LegacyAppPathString"}, "environmentId": {"type": "string"}, "runtimeWorkspaceRoots": {"items": {"$ref": "#/definitions/LegacyAppPathString"}, "type": ["array", "null"]}}, "required": ["cwd", "environmentId"], "type": "object"},
  EnvironmentAddParams: {"properties": {"authBearerToken": {"type": ["string", "null"]}, "connectTimeoutMs": {"format": "uint64", "minimum": 0.0, "type": ["integer", "null"]}, "environmentId": {"type": "string"}, "execServerUrl": {"type": "string"}, "websocketRequestId": {"type": ["string", "null"]}}, "required": ["environmentId", "execServerUrl"], "title": "EnvironmentAddParams", "type": "object"},
  EnvironmentAddResponse: {"title": "EnvironmentAddResponse", "type": "object"},
  EnvironmentInfoParams: {"properties": {"environmentId": {"type": "string"}}, "required": ["environmentId"], "title": "EnvironmentInfoParams", "type": "object"},
  EnvironmentInfoResponse: {"properties": {"cwd": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "shell": {"$ref": "#/definitions/EnvironmentShellInfo"}}, "required": ["shell"], "title": "EnvironmentInfoResponse", "type": "object"},
  EnvironmentShellInfo: {"properties": {"name": {"type": "string"}, "path": {"type": "string"}}, "required": ["name", "path"], "type": "object"},
  // S25, as 0.171.0 generates them (--experimental; descriptions left out)
  EnvironmentStatusParams: {"properties": {"environmentId": {"type": "string"}}, "required": ["environmentId"], "title": "EnvironmentStatusParams", "type": "object"},
  EnvironmentStatusResponse: {"properties": {"error": {"type": ["string", "null"]}, "status": {"allOf": [{"$ref": "#/definitions/EnvironmentStatusKind"}]}}, "required": ["status"], "title": "EnvironmentStatusResponse", "type": "object"},
  EnvironmentStatusKind: {"oneOf": [{"enum": ["ready"], "type": "string"}, {"enum": ["pending"], "type": "string"}, {"enum": ["disconnected"], "type": "string"}, {"enum": ["unknown"], "type": "string"}]},
  CommandExecParams: {"properties": {"command": {"items": {"type": "string"}, "type": "array"}, "cwd": {"type": ["string", "null"]}, "disableOutputCap": {"type": "boolean"}, "disableTimeout": {"type": "boolean"}, "env": {"additionalProperties": {"type": ["string", "null"]}, "type": ["object", "null"]}, "outputBytesCap": {"format": "uint", "minimum": 0.0, "type": ["integer", "null"]}, "permissionProfile": {"type": ["string", "null"]}, "processId": {"type": ["string", "null"]}, "sandboxPolicy": {"anyOf": [{"$ref": "#/definitions/SandboxPolicy"}, {"type": "null"}]}, "size": {"anyOf": [{"$ref": "#/definitions/CommandExecTerminalSize"}, {"type": "null"}]}, "streamStdin": {"type": "boolean"}, "streamStdoutStderr": {"type": "boolean"}, "timeoutMs": {"format": "int64", "type": ["integer", "null"]}, "tty": {"type": "boolean"}}, "required": ["command"], "title": "CommandExecParams", "type": "object"},
  CommandExecTerminalSize: {"properties": {"cols": {"format": "uint16", "minimum": 0.0, "type": "integer"}, "rows": {"format": "uint16", "minimum": 0.0, "type": "integer"}}, "required": ["cols", "rows"], "type": "object"},
  CommandExecResponse: {"properties": {"exitCode": {"format": "int32", "type": "integer"}, "stderr": {"type": "string"}, "stdout": {"type": "string"}}, "required": ["exitCode", "stderr", "stdout"], "title": "CommandExecResponse", "type": "object"},
  CommandExecWriteParams: {"properties": {"closeStdin": {"type": "boolean"}, "deltaBase64": {"type": ["string", "null"]}, "processId": {"type": "string"}}, "required": ["processId"], "title": "CommandExecWriteParams", "type": "object"},
  CommandExecWriteResponse: {"title": "CommandExecWriteResponse", "type": "object"},
  CommandExecResizeParams: {"properties": {"processId": {"type": "string"}, "size": {"allOf": [{"$ref": "#/definitions/CommandExecTerminalSize"}]}}, "required": ["processId", "size"], "title": "CommandExecResizeParams", "type": "object"},
  CommandExecResizeResponse: {"title": "CommandExecResizeResponse", "type": "object"},
  CommandExecTerminateParams: {"properties": {"processId": {"type": "string"}}, "required": ["processId"], "title": "CommandExecTerminateParams", "type": "object"},
  CommandExecTerminateResponse: {"title": "CommandExecTerminateResponse", "type": "object"},
  CommandExecOutputDeltaNotification: {"properties": {"capReached": {"type": "boolean"}, "deltaBase64": {"type": "string"}, "processId": {"type": "string"}, "stream": {"allOf": [{"$ref": "#/definitions/CommandExecOutputStream"}]}}, "required": ["capReached", "deltaBase64", "processId", "stream"], "title": "CommandExecOutputDeltaNotification", "type": "object"},
  CommandExecOutputStream: {"oneOf": [{"enum": ["stdout"], "type": "string"}, {"enum": ["stderr"], "type": "string"}]}
}

const base: Fixture = {
  definitions,
  clientRequests: {
    initialize: "InitializeParams",
    "thread/start": "ThreadStartParams",
    "thread/resume": "ThreadResumeParams",
    "thread/list": "ThreadListParams",
    "turn/start": "TurnStartParams",
    "turn/interrupt": "TurnInterruptParams",
    "turn/steer": "TurnSteerParams",
    "thread/read": "ThreadReadParams",
    "thread/compact/start": "ThreadCompactStartParams",
    "thread/turns/list": "ThreadTurnsListParams",
    "thread/fork": "ThreadForkParams",
    "thread/inject_items": "ThreadInjectItemsParams",
    "thread/archive": "ThreadArchiveParams",
    "thread/delete": "ThreadDeleteParams",
    "thread/unsubscribe": "ThreadUnsubscribeParams",
    "plugin/installed": "PluginInstalledParams",
    "plugin/read": "PluginReadParams",
    "app/installed": "AppsInstalledParams",
    "feedback/upload": "FeedbackUploadParams",
    "server/diagnostics": "ServerDiagnosticsParams",
    "environment/add": "EnvironmentAddParams",
    "environment/info": "EnvironmentInfoParams",
    "environment/status": "EnvironmentStatusParams",
    "command/exec": "CommandExecParams",
    "command/exec/write": "CommandExecWriteParams",
    "command/exec/resize": "CommandExecResizeParams",
    "command/exec/terminate": "CommandExecTerminateParams"
  },
  serverNotifications: {
    error: "ErrorNotification",
    "thread/started": "ThreadStartedNotification",
    "thread/status/changed": "ThreadStatusChangedNotification",
    "turn/started": "TurnStartedNotification",
    "turn/completed": "TurnCompletedNotification",
    "item/started": "ItemStartedNotification",
    "item/completed": "ItemCompletedNotification",
    "item/agentMessage/delta": "AgentMessageDeltaNotification",
    "serverRequest/resolved": "ServerRequestResolvedNotification",
    "thread/archived": "ThreadArchivedNotification",
    "thread/closed": "ThreadClosedNotification",
    "hook/started": "HookStartedNotification",
    "hook/completed": "HookCompletedNotification",
    "command/exec/outputDelta": "CommandExecOutputDeltaNotification",
    "thread/tokenUsage/updated": "ThreadTokenUsageUpdatedNotification",
    "mcpServer/startupStatus/updated": "McpServerStatusUpdatedNotification"
  },
  serverRequests: {
    "item/commandExecution/requestApproval": "CommandExecutionRequestApprovalParams",
    "item/fileChange/requestApproval": "FileChangeRequestApprovalParams",
    "item/tool/requestUserInput": "ToolRequestUserInputParams",
    "mcpServer/elicitation/request": "McpServerElicitationRequestParams",
    "item/permissions/requestApproval": "PermissionsRequestApprovalParams",
    "item/tool/call": "DynamicToolCallParams",
    "account/chatgptAuthTokens/refresh": "ChatgptAuthTokensRefreshParams"
  }
}

/** Checks a copy of the fixture after `change`, against the real contract unless another is given. */
const check = (change: (g: Fixture) => void, contract: Contract = harnessContract): ReadonlyArray<ContractProblem> => {
  const g = structuredClone(base)
  change(g)
  return checkContract(g satisfies GeneratedSchema, contract)
}
const lines = (problems: ReadonlyArray<ContractProblem>) => problems.map(formatProblem)
const kinds = (problems: ReadonlyArray<ContractProblem>) => [...new Set(problems.map((p) => p.kind))]
const itemVariant = (g: Fixture, title: string): Node => g.definitions["ThreadItem"].oneOf.find((v: Node) => v.title === title)
const expectOnly = (problems: ReadonlyArray<ContractProblem>, kind: ProblemKind) => expect(kinds(problems)).toEqual([kind])

describe("protocol check against a fabricated generated schema", () => {
  it("[protocol] a generated schema that matches our schemas gives zero problems", () => {
    expect(lines(check(() => {}))).toEqual([])
  })

  it("[protocol] a method we call that the binary dropped is reported by name", () => {
    const problems = check((g) => delete g.clientRequests["turn/interrupt"])
    expect(problems).toEqual([
      { kind: "MethodRemoved", where: "turn/interrupt", message: "we call this method but the binary no longer has it" }
    ])
  })

  it("[protocol] a notification we read that the binary no longer emits is reported by name", () => {
    const problems = check((g) => delete g.serverNotifications["item/agentMessage/delta"])
    expectOnly(problems, "NotificationRemoved")
    expect(lines(problems)).toEqual([
      "item/agentMessage/delta: we read this notification but the binary no longer emits it"
    ])
  })

  it("[protocol] a server request we handle that the binary no longer sends is reported", () => {
    const problems = check((g) => delete g.serverRequests["item/tool/requestUserInput"])
    expectOnly(problems, "ServerRequestRemoved")
    expect(problems[0]?.where).toBe("item/tool/requestUserInput")
  })

  it("[protocol] a missing params or result definition is reported", () => {
    const problems = check((g) => delete g.definitions["TurnStartResponse"])
    expect(lines(problems)).toEqual(["turn/start result: definition TurnStartResponse is missing from the generated schema"])
  })

  it("[protocol] a params field we send that their definition dropped is reported with method and field", () => {
    const problems = check((g) => delete g.definitions["ThreadStartParams"].properties.developerInstructions)
    expect(lines(problems)).toEqual([
      "thread/start params.developerInstructions: we send this field but theirs has no such field"
    ])
  })

  it("[protocol] a field we read that their definition dropped is reported wherever we read it", () => {
    const problems = check((g) => delete g.definitions["Thread"].properties.preview)
    expectOnly(problems, "FieldMissing")
    expect(lines(problems)).toEqual([
      "thread/start result.thread.preview: we read this field but theirs has no such field",
      "thread/resume result.thread.preview: we read this field but theirs has no such field",
      "thread/read result.thread.preview: we read this field but theirs has no such field",
      "thread/list result.data[].preview: we read this field but theirs has no such field",
      "thread/fork result.thread.preview: we read this field but theirs has no such field",
      "thread/started params.thread.preview: we read this field but theirs has no such field"
    ])
  })

  it("[protocol] a field we require in a notification that became optional in theirs is reported", () => {
    const problems = check((g) => {
      g.definitions["AgentMessageDeltaNotification"].required = ["delta", "threadId", "turnId"]
    })
    expect(problems).toEqual([{
      kind: "FieldOptional",
      where: "item/agentMessage/delta params.itemId",
      message: "required in ours but optional in theirs"
    }])
  })

  it("[protocol] a field we require in a response that became optional in theirs is reported", () => {
    const problems = check((g) => {
      g.definitions["Turn"].required = ["id", "items"]
    })
    expectOnly(problems, "FieldOptional")
    expect(lines(problems)).toContain("turn/start result.turn.status: required in ours but optional in theirs")
    expect(lines(problems)).toContain("turn/completed params.turn.status: required in ours but optional in theirs")
  })

  it("[protocol] a params field that became required by theirs is reported: absent from ours, or optional in ours", () => {
    const problems = check((g) => {
      g.definitions["ThreadStartParams"].required = ["serviceName"]
      g.definitions["ThreadResumeParams"].required = ["threadId", "model"]
    })
    expect(lines(problems)).toEqual([
      "thread/start params.serviceName: required by theirs but absent from ours",
      "thread/resume params.model: optional in ours but required by theirs"
    ])
    expect(kinds(problems)).toEqual(["RequiredFieldMissing", "FieldRequired"])
  })

  it("[protocol] a primitive kind change is reported with both kinds", () => {
    const problems = check((g) => {
      g.definitions["AgentMessageDeltaNotification"].properties.delta = { type: "integer" }
      g.definitions["ErrorNotification"].properties.willRetry = { type: "string" }
      g.definitions["InitializeResponse"].properties.platformOs = { type: "array", items: { type: "string" } }
    })
    expectOnly(problems, "KindMismatch")
    expect(lines(problems)).toEqual([
      "initialize result.platformOs: ours is string, theirs is array",
      "item/agentMessage/delta params.delta: ours is string, theirs is integer",
      "error params.willRetry: ours is boolean, theirs is string"
    ])
  })

  it("[protocol] an array that became an object (and a struct that became a string) is reported", () => {
    const problems = check((g) => {
      g.definitions["TurnStartParams"].properties.input = { type: "object", additionalProperties: true }
      g.definitions["TurnError"] = { type: "string" }
    })
    expect(lines(problems)).toContain("turn/start params.input: ours is array, theirs is object")
    expect(lines(problems)).toContain("error params.error: ours is object, theirs is string")
  })

  it("[protocol] a string enum losing a value we send is reported (plain enum)", () => {
    const problems = check((g) => {
      g.definitions["SandboxMode"].enum = ["read-only", "workspace-write"]
    })
    expectOnly(problems, "LiteralNotInEnum")
    expect(lines(problems)).toEqual([
      `thread/start params.sandbox: "danger-full-access" is not among theirs ("read-only", "workspace-write")`,
      `thread/resume params.sandbox: "danger-full-access" is not among theirs ("read-only", "workspace-write")`
    ])
  })

  it("[protocol] a value removed from a oneOf of string enum and object (AskForApproval) is reported", () => {
    const problems = check((g) => {
      g.definitions["AskForApproval"].oneOf[0].enum = ["untrusted", "on-request"]
    })
    expect(lines(problems)).toContain(
      `thread/start params.approvalPolicy: "never" is not among theirs ("untrusted", "on-request")`
    )
    expect(lines(problems)).toContain(`turn/start params.approvalPolicy: "never" is not among theirs ("untrusted", "on-request")`)
  })

  it("[protocol][S7] losing personality \"none\" is reported on every method that sends it", () => {
    const problems = check((g) => {
      g.definitions["Personality"].enum = ["friendly", "pragmatic"]
    })
    expect(problems.map((p) => p.where)).toEqual([
      "thread/start params.personality",
      "thread/resume params.personality",
      "turn/start params.personality"
    ])
  })

  it("[protocol] a status we read losing a value is reported (TurnStatus)", () => {
    const problems = check((g) => {
      g.definitions["TurnStatus"].enum = ["completed", "interrupted", "failed"]
    })
    expect(lines(problems)).toContain(
      `turn/completed params.turn.status: "inProgress" is not among theirs ("completed", "interrupted", "failed")`
    )
  })

  it("[protocol] a user input variant we send that disappeared is reported on its discriminator", () => {
    const problems = check((g) => {
      g.definitions["UserInput"].oneOf = g.definitions["UserInput"].oneOf.filter((v: Node) => v.title !== "LocalImageUserInput")
    })
    expect(lines(problems)).toEqual([
      `turn/start params.input[].type: "localImage" is not among theirs ("text", "image")`,
      `turn/steer params.input[].type: "localImage" is not among theirs ("text", "image")`
    ])
  })

  it("[protocol] a ThreadItem variant we read that disappeared is reported by title", () => {
    const problems = check((g) => {
      g.definitions["ThreadItem"].oneOf = g.definitions["ThreadItem"].oneOf.filter(
        (v: Node) => v.title !== "DynamicToolCallThreadItem"
      )
    })
    expect(problems).toContainEqual({
      kind: "ItemVariantRemoved",
      where: "ThreadItem DynamicToolCallThreadItem",
      message: "we read this item kind but ThreadItem no longer has the variant"
    })
    // inside turns and item notifications the variant's discriminator no longer matches anything
    expect(lines(problems)).toContain(
      `item/completed params.item.type: "dynamicToolCall" is not among theirs ("userMessage", "hookPrompt", ` +
        `"agentMessage", "functionCallOutput", "plan", "reasoning", "commandExecution", "fileChange", "mcpToolCall", ` +
        `"collabAgentToolCall", "subAgentActivity", "webSearch", "imageView", "sleep", "imageGeneration", ` +
        `"enteredReviewMode", "exitedReviewMode", "contextCompaction")`
    )
  })

  it("[protocol] a field dropped from a ThreadItem variant is reported under the item and every payload carrying it", () => {
    const problems = check((g) => {
      const agent = itemVariant(g, "AgentMessageThreadItem")
      delete agent.properties.text
      agent.required = ["id", "type"]
    })
    expectOnly(problems, "FieldMissing")
    expect(lines(problems)).toEqual([
      "turn/start result.turn.items[](agentMessage).text: we read this field but theirs has no such field",
      "thread/turns/list result.data[].items[](agentMessage).text: we read this field but theirs has no such field",
      "turn/started params.turn.items[](agentMessage).text: we read this field but theirs has no such field",
      "turn/completed params.turn.items[](agentMessage).text: we read this field but theirs has no such field",
      "item/started params.item(agentMessage).text: we read this field but theirs has no such field",
      "item/completed params.item(agentMessage).text: we read this field but theirs has no such field",
      "ThreadItem AgentMessageThreadItem.text: we read this field but theirs has no such field"
    ])
  })

  it("[protocol][S41] imageGeneration losing savedPath is reported on the ImageGenerationThreadItem variant", () => {
    const problems = check((g) => delete itemVariant(g, "ImageGenerationThreadItem").properties.savedPath)
    expect(lines(problems)).toContain(
      "ThreadItem ImageGenerationThreadItem.savedPath: we read this field but theirs has no such field"
    )
  })

  it("[protocol] the catch-all item must fit every variant we do not type: a variant without id is reported", () => {
    const problems = check((g) => {
      const command = itemVariant(g, "CommandExecutionThreadItem")
      command.required = ["command", "status", "type"]
    })
    expect(lines(problems)).toContain("item/completed params.item.id: required in ours but optional in theirs")
  })

  it("[protocol] a field that may now be null where we do not accept null is reported", () => {
    const problems = check((g) => {
      g.definitions["TurnError"].properties.message = { type: ["string", "null"] }
    })
    expectOnly(problems, "Nullability")
    expect(lines(problems)).toContain("error params.error.message: may be null in theirs but our schema does not accept null")
  })

  it("[protocol] server request params must still carry the threadId we route by", () => {
    const problems = check((g) => {
      delete g.definitions["McpServerElicitationRequestParams"].properties.threadId
    })
    expect(lines(problems)).toEqual([
      "mcpServer/elicitation/request params.threadId: we read this field but theirs has no such field"
    ])
  })

  it("[protocol] a server-request params field we read that the binary dropped is reported", () => {
    const problems = check((g) => {
      const params = g.definitions["DynamicToolCallParams"]
      delete params.properties.callId
      params.required = params.required.filter((r: string) => r !== "callId")
    })
    expect(problems).toEqual([{
      kind: "FieldMissing",
      where: "item/tool/call params.callId",
      message: "we read this field but theirs has no such field"
    }])
  })

  it("[protocol] a decision we send that the binary no longer accepts is reported on the response", () => {
    const problems = check((g) => {
      const decision = g.definitions["CommandExecutionApprovalDecision"]
      decision.oneOf = decision.oneOf.filter((v: Node) => v.enum?.[0] !== "acceptForSession")
      g.definitions["PermissionGrantScope"].enum = ["turn"]
    })
    expectOnly(problems, "LiteralNotInEnum")
    expect(lines(problems)).toEqual([
      `item/commandExecution/requestApproval response.decision: "acceptForSession" is not among theirs ("accept", "decline", "cancel")`,
      `item/permissions/requestApproval response.scope: "session" is not among theirs ("turn")`
    ])
  })

  it("[protocol] a response field the binary now requires, or no longer has, is reported on the response", () => {
    const problems = check((g) => {
      g.definitions["DynamicToolCallResponse"].required = ["contentItems", "success", "durationMs"]
      delete g.definitions["McpServerElicitationRequestResponse"].properties.content
    })
    expect(problems).toEqual([
      {
        kind: "RequiredFieldMissing",
        where: "item/tool/call response.durationMs",
        message: "required by theirs but absent from ours"
      },
      {
        kind: "FieldMissing",
        where: "mcpServer/elicitation/request response.content",
        message: "we send this field but theirs has no such field"
      }
    ])
  })

  it("[protocol] a tool output item we send whose variant disappeared is reported on its discriminator", () => {
    const problems = check((g) => {
      const item = g.definitions["DynamicToolCallOutputContentItem"]
      item.oneOf = item.oneOf.filter((v: Node) => v.title !== "InputImageDynamicToolCallOutputContentItem")
    })
    expect(lines(problems)).toEqual([
      `item/tool/call response.contentItems[].type: "inputImage" is not among theirs ("inputText", "inputAudio")`
    ])
  })

  it("[protocol] a missing response definition is reported", () => {
    const problems = check((g) => delete g.definitions["ToolRequestUserInputResponse"])
    expect(problems).toEqual([{
      kind: "DefinitionMissing",
      where: "item/tool/requestUserInput response",
      message: "definition ToolRequestUserInputResponse is missing from the generated schema"
    }])
  })

  it("[protocol] a server request of a contract of its own: removed is reported once, present is held to the binary's table", () => {
    const contract: Contract = {
      clientMethods: {},
      notifications: {},
      items: [],
      serverRequests: {
        "x/ask": {
          params: Schema.Struct({ threadId: Schema.String, prompt: Schema.String }),
          response: Schema.Struct({ answer: Schema.Literal("yes", "no") }),
          paramsDefinition: "XAskParams",
          responseDefinition: "XAskResponse"
        }
      }
    }
    // the binary dropped the method: neither params nor response is looked at
    expect(check(() => {}, contract)).toEqual([{
      kind: "ServerRequestRemoved",
      where: "x/ask",
      message: "we handle this server request but the binary no longer sends it"
    }])
    // the binary's own method table names the params definition (ours, XAskParams, is absent)
    const problems = check((g) => {
      g.serverRequests["x/ask"] = "XAskParamsV2"
      g.definitions["XAskParamsV2"] = {
        type: "object",
        properties: { threadId: { type: "string" }, prompt: { type: ["string", "null"] } },
        required: ["threadId"]
      }
      g.definitions["XAskResponse"] = {
        type: "object",
        properties: { answer: { enum: ["yes"], type: "string" } },
        required: ["answer"]
      }
    }, contract)
    expect(lines(problems)).toEqual([
      "x/ask params.prompt: required in ours but optional in theirs",
      "x/ask params.prompt: may be null in theirs but our schema does not accept null",
      `x/ask response.answer: "no" is not among theirs ("yes")`
    ])
  })

  it("[protocol] initialize is checked against the v1 definitions", () => {
    const problems = check((g) => {
      g.definitions["ClientInfo"].properties.version = { type: "integer" }
    })
    expect(lines(problems)).toEqual(["initialize params.clientInfo.version: ours is string, theirs is integer"])
  })

  it("[protocol] lenient where their side is unconstrained or ours is Schema.Unknown", () => {
    const problems = check((g) => {
      // ours: Schema.Unknown
      g.definitions["ThreadStartResponse"].properties.sandbox = { type: "integer" }
      itemVariant(g, "AgentMessageThreadItem").properties.phase = { type: "boolean" }
      // theirs: anything
      g.definitions["Thread"].properties.cwd = {}
      g.definitions["TurnStartParams"].properties.model = true
      g.definitions["Turn"].properties.items = { type: "array" }
    })
    expect(lines(problems)).toEqual([])
  })

  it("[protocol] a record of ours needs an open object on their side", () => {
    const problems = check((g) => {
      g.definitions["ThreadStartParams"].properties.config = {
        type: "object",
        additionalProperties: false,
        properties: { model: { type: "string" } }
      }
    })
    expect(lines(problems)).toEqual([
      "thread/start params.config: we may send null but theirs does not accept null",
      "thread/start params.config: ours is a record but theirs is a closed object (no additionalProperties)"
    ])
  })

  it("[protocol] a small contract of its own: Refinement, Transformation and Suspend are unwrapped to the wire shape", () => {
    const Name = Schema.String.pipe(Schema.minLength(1))
    const Count = Schema.NumberFromString
    interface Tree {
      readonly label: string
      readonly children: ReadonlyArray<Tree>
    }
    const Tree: Schema.Schema<Tree> = Schema.Struct({
      label: Schema.String,
      children: Schema.Array(Schema.suspend(() => Tree))
    })
    const Params = Schema.Struct({ name: Name, count: Count, tree: Tree })
    const contract: Contract = {
      clientMethods: {
        "x/do": { params: Params, result: Schema.Struct({}), paramsDefinition: "XParams", resultDefinition: "XResponse" }
      },
      notifications: {},
      items: [],
      serverRequests: {}
    }
    const problems = check((g) => {
      g.clientRequests["x/do"] = "XParams"
      g.definitions["XResponse"] = { type: "object" }
      g.definitions["Tree"] = {
        type: "object",
        properties: { label: { type: "string" }, children: { type: "array", items: { $ref: "#/definitions/Tree" } } },
        required: ["label", "children"]
      }
      g.definitions["XParams"] = {
        type: "object",
        properties: {
          name: { type: "string" },
          count: { type: "integer" },
          tree: { $ref: "#/definitions/Tree" }
        },
        required: ["name", "count", "tree"]
      }
    }, contract)
    // NumberFromString is a string on the wire
    expect(lines(problems)).toEqual(["x/do params.count: ours is string, theirs is integer"])
  })
})

describe("protocol check: supervision methods", () => {
  it("[protocol][S15] the probe fork losing excludeTurns, or a thread list losing its descendant filter, is reported", () => {
    const problems = check((g) => {
      delete g.definitions["ThreadForkParams"].properties.excludeTurns
      delete g.definitions["ThreadListParams"].properties.ancestorThreadId
    })
    expect(lines(problems)).toEqual([
      "thread/list params.ancestorThreadId: we send this field but theirs has no such field",
      "thread/fork params.excludeTurns: we send this field but theirs has no such field"
    ])
  })

  it("[protocol][S15] an unsubscribe status we read that disappeared is reported", () => {
    const problems = check((g) => {
      g.definitions["ThreadUnsubscribeStatus"].enum = ["notLoaded", "unsubscribed"]
    })
    expect(lines(problems)).toEqual([
      `thread/unsubscribe result.status: "notSubscribed" is not among theirs ("notLoaded", "unsubscribed")`
    ])
  })
})

describe("protocol check report", () => {
  it("[protocol] prints one summary line when clean and one line per problem otherwise", () => {
    const clean = { methods: 5, notifications: 7, itemKinds: 7, serverRequests: 6, problems: [] }
    expect(summarize(clean)).toEqual([
      "protocol check: 5 methods, 7 notifications, 7 item kinds, 6 server requests checked, 0 problems"
    ])
    const problems = check((g) => delete g.clientRequests["thread/start"])
    expect(summarize({ ...clean, problems })).toEqual(["thread/start: we call this method but the binary no longer has it"])
  })
})
