// The whole command tree: what main.ts parses and help.ts describes. Names, flags and descriptions only; each
// command's implementation is loaded when it runs (lazy.ts).
import { Command } from "@effect/cli"
import type { HelpTree } from "../help.js"
import * as Answer from "./answer.js"
import * as Apps from "./apps.js"
import * as Chat from "./chat.js"
import * as Cluster from "./cluster.js"
import * as Compact from "./compact.js"
import * as Config from "./config.js"
import * as Demo from "./demo.js"
import * as Diagnostics from "./diagnostics.js"
import * as Doctor from "./doctor.js"
import * as Events from "./events.js"
import * as Exec from "./exec.js"
import * as Nodes from "./nodes.js"
import * as Run from "./run.js"
import * as Serve from "./serve.js"
import * as Sessions from "./sessions.js"
import * as Threads from "./threads.js"

const commands = [Run.command, Chat.command, Sessions.command, Demo.command, Config.command, Compact.command, Threads.command, Apps.command, Events.command, Doctor.command, Diagnostics.command, Exec.command, Nodes.command, Serve.command, Answer.pendingCommand, Answer.answerCommand, Cluster.command] as const

export const root = Command.make("codex-harness").pipe(
  Command.withDescription("drive the real codex app-server: sessions, turns and everything around them"),
  Command.withSubcommands(commands)
)

const leaf = (command: HelpTree["command"]): HelpTree => ({ command, children: [] })
const parent = (command: HelpTree["command"], children: ReadonlyArray<HelpTree["command"]>): HelpTree => ({
  command,
  children: children.map(leaf)
})

/** the same tree for help.ts, which reads each command's own help (a parent's does not describe its children) */
export const helpTree: HelpTree = {
  command: root,
  children: [
    leaf(Run.command),
    leaf(Chat.command),
    parent(Sessions.command, Sessions.subcommands),
    leaf(Demo.command),
    parent(Config.command, Config.subcommands),
    leaf(Compact.command),
    parent(Threads.command, Threads.subcommands),
    parent(Apps.command, Apps.subcommands),
    parent(Events.command, Events.subcommands),
    leaf(Doctor.command),
    leaf(Diagnostics.command),
    leaf(Exec.command),
    parent(Nodes.command, Nodes.subcommands),
    leaf(Serve.command),
    leaf(Answer.pendingCommand),
    leaf(Answer.answerCommand),
    parent(Cluster.command, Cluster.subcommands)
  ]
}

/** A few typical calls per help page, keyed like help.ts's pages (the command path joined with spaces). */
export const examples: Readonly<Record<string, ReadonlyArray<string>>> = {
  "": ["codex-harness demo", 'codex-harness run --provider-url http://127.0.0.1:8080/v1 "say hello"', "codex-harness chat"],
  run: [
    'codex-harness run "list the files in this directory"',
    'codex-harness run --session SESSION_ID "and now the tests"',
    'codex-harness run --json "say hello" > events.jsonl',
    'codex-harness run --turn-kind toolDisabled "summarise the alerts in one line"',
    'codex-harness run --record turn.jsonl "say hello"'
  ],
  chat: ["codex-harness chat", "codex-harness chat --session SESSION_ID", "printf 'hi\\nthanks\\n' | codex-harness chat"],
  sessions: ["codex-harness sessions list"],
  "sessions list": ["codex-harness sessions list", "codex-harness sessions list --json"],
  "sessions show": ["codex-harness sessions show SESSION_ID", "codex-harness sessions show 3f2a9c1e"],
  "sessions delete": ["codex-harness sessions delete SESSION_ID"],
  "sessions repair": ["codex-harness sessions repair SESSION_ID"],
  "sessions redact": ["codex-harness sessions redact SESSION_ID --call CALL_ID", "codex-harness sessions redact SESSION_ID --turn TURN_ID"],
  demo: ["codex-harness demo"],
  config: ["codex-harness config show", "codex-harness config schema > config.schema.json"],
  "config schema": ["codex-harness config schema > config.schema.json"],
  "config show": ["codex-harness config show --model gpt-5"],
  compact: ["codex-harness compact --session SESSION_ID"],
  threads: ["codex-harness threads list"],
  apps: ["codex-harness apps list"],
  "apps list": ["codex-harness apps list --session SESSION_ID", "codex-harness apps list --json"],
  events: ["codex-harness events schema > events.schema.json"],
  "events schema": ["codex-harness events schema > events.schema.json"],
  "threads list": ["codex-harness threads list --json"],
  nodes: ["codex-harness nodes list"],
  "nodes pair": ["codex-harness nodes pair --token-env NODE_TOKEN node1 ws://127.0.0.1:8765"],
  "nodes list": ["codex-harness nodes list --json"],
  "nodes unpair": ["codex-harness nodes unpair node1"],
  "nodes run": ['codex-harness nodes run --node-cwd /srv/work node1 "run the tests"'],
  serve: [
    "codex-harness serve",
    "codex-harness serve --listen 127.0.0.1:0 --provider-url http://127.0.0.1:8080/v1",
    "codex-harness serve --listen unix:/run/user/1000/codex-harness.sock",
    "codex-harness serve --cluster postgres://harness@db.internal:5432/harness --runner-listen 10.0.0.5:4660"
  ],
  cluster: ["codex-harness cluster status --cluster postgres://harness@db.internal:5432/harness"],
  "cluster status": ["codex-harness cluster status --cluster postgres://harness@db.internal:5432/harness"],
  pending: ["codex-harness pending", "codex-harness pending --json"],
  answer: ["codex-harness answer approval-1a2b3c4d5e6f allow", "codex-harness answer question-1a2b3c4d5e6f --text yes"],
  "threads show": ["codex-harness threads show THREAD_ID"],
  "threads branch": ["codex-harness threads branch THREAD_ID"],
  "threads archive": ["codex-harness threads archive --confirm-no-other-runner THREAD_ID"],
  doctor: ["codex-harness doctor", "codex-harness doctor --provider-url http://127.0.0.1:8080/v1"],
  diagnostics: [
    'codex-harness diagnostics --session SESSION_ID "the reply never came"',
    "codex-harness diagnostics --session SESSION_ID --thread-only --approvals allow",
    "codex-harness diagnostics --session SESSION_ID --bundle diagnostics.json"
  ],
  exec: [
    "codex-harness exec -- make test",
    "codex-harness exec --pty -- top -b -n 1",
    "codex-harness exec --sandbox workspace-write --cwd ./repo -- sh -c 'npm ci && npm test'"
  ]
}
