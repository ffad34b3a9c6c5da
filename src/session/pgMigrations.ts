// The PostgreSQL schema of the session store, as @effect/sql migrations kept in the repo and run at start-up (by
// PgSessionStore, before it serves anything). Every table is prefixed `harness_`: the database is shared with
// @effect/cluster, whose tables are `cluster_*`, and the migrations' own bookkeeping is `harness_migrations` (the
// cluster's is `cluster_migrations`). A migration, once released, is never edited: a change is a new numbered entry.
//
// Start-up races: the Migrator takes `LOCK TABLE harness_migrations` in its transaction, so two processes migrating at
// once run each migration once; but it creates that table first, outside the lock, and two processes doing so on an
// empty database can collide in the catalog (`duplicate key value violates unique constraint
// "pg_class_relname_nsp_index"`, seen with the cluster's tables in CLUSTER-NOTES trap 9). The loser simply tries again.
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"

export const migrationsTable = "harness_migrations"

const statements = (...parts: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => Effect.forEach(parts, (part) => sql.unsafe(part), { discard: true }))

export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  // Sessions and their records. A record is kept as the JSON text it was encoded to (not jsonb, which would reorder
  // its keys): it reads back byte for byte, as a session file's line does, and a row that no longer decodes (a kind
  // this version does not know, a hand edit) is reported as corrupt instead of refused by the column. `seq` counts a
  // session's records from 1 without gaps (`last_seq` hands them out under the session row's lock), so it is the
  // record's line in the session as a file would hold it; the primary key is the index a session is read in order by.
  "1_sessions": statements(
    `CREATE TABLE harness_sessions (
      id text PRIMARY KEY,
      last_seq integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE INDEX harness_sessions_updated_at ON harness_sessions (updated_at DESC)`,
    `CREATE TABLE harness_records (
      session_id text NOT NULL REFERENCES harness_sessions (id) ON DELETE CASCADE,
      seq integer NOT NULL,
      tag text NOT NULL,
      record text NOT NULL,
      at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (session_id, seq)
    )`
  ),
  // Turn idempotency for the cluster layer (delivery is at-least-once): a message id recorded with its turn before
  // `turn/start`, so a redelivered message waits for or reports the turn it already started. Written by that layer.
  "2_turn_messages": statements(
    `CREATE TABLE harness_turn_messages (
      message_id text PRIMARY KEY,
      session_id text NOT NULL,
      status text NOT NULL,
      runner text,
      thread_id text,
      turn_id text,
      outcome jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
    `COMMENT ON COLUMN harness_turn_messages.status IS 'started | completed | failed | lost'`,
    `CREATE INDEX harness_turn_messages_session ON harness_turn_messages (session_id, created_at)`
  ),
  // Bounded reads and retention (issue 33). A session's snapshot (SessionSnapshot.ts): records up to `snapshot_seq` are
  // behind it, and of those only `snapshot_keep` are still read; a turn reads those and the tail after it, not the whole
  // transcript. A session reference is resolved by an index lookup on the id in byte order (a prefix is a range there,
  // whatever the database's collation). The retention job deletes ledger rows by age and records by age behind the
  // snapshot.
  "3_snapshots": statements(
    `ALTER TABLE harness_sessions ADD COLUMN snapshot_seq integer NOT NULL DEFAULT 0,
      ADD COLUMN snapshot_keep integer[] NOT NULL DEFAULT '{}'`,
    `CREATE INDEX harness_sessions_id_bytes ON harness_sessions (id COLLATE "C")`,
    `CREATE INDEX harness_turn_messages_created ON harness_turn_messages (created_at)`
  )
}

const run = Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: migrationsTable })

/**
 * Runs the migrations not yet applied; returns those it ran. A migration that fails is a MigrationError (the Migrator
 * reports it as a defect; it is turned back into a failure here), and the transaction it ran in is rolled back.
 */
export const migrate: Effect.Effect<ReadonlyArray<readonly [id: number, name: string]>, Migrator.MigrationError | SqlError, SqlClient.SqlClient> =
  run.pipe(
    Effect.catchAllDefect((defect) => defect instanceof Migrator.MigrationError ? Effect.fail(defect) : Effect.die(defect)),
    // the bookkeeping table's creation raced another process's (see the header): by now it exists
    Effect.retry({ times: 2, while: (e) => e._tag === "SqlError" })
  )
