import type { Pool } from 'pg';

export const AGENT_SCHEMA = 'agent_server';

/** Lock id serializing schema setup when several agent-server processes boot on one database. */
const MIGRATION_LOCK = 0x61677376; // "agsv"

const STATEMENTS = [
  `CREATE SCHEMA IF NOT EXISTS ${AGENT_SCHEMA}`,
  `CREATE TABLE IF NOT EXISTS ${AGENT_SCHEMA}.assistants (
     assistant_id uuid PRIMARY KEY,
     graph_id text NOT NULL,
     name text NOT NULL,
     description text,
     config jsonb NOT NULL DEFAULT '{}',
     context jsonb NOT NULL DEFAULT '{}',
     metadata jsonb NOT NULL DEFAULT '{}',
     version integer NOT NULL DEFAULT 1,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now())`,
  `CREATE TABLE IF NOT EXISTS ${AGENT_SCHEMA}.threads (
     thread_id uuid PRIMARY KEY,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now(),
     state_updated_at timestamptz NOT NULL DEFAULT now(),
     metadata jsonb NOT NULL DEFAULT '{}',
     status text NOT NULL DEFAULT 'idle',
     "values" jsonb,
     interrupts jsonb NOT NULL DEFAULT '{}',
     config jsonb NOT NULL DEFAULT '{}',
     error jsonb,
     graph_id text,
     active_run_id uuid,
     stateless boolean NOT NULL DEFAULT false)`,
  `CREATE INDEX IF NOT EXISTS threads_created ON ${AGENT_SCHEMA}.threads (created_at)`,
  // A thread's ttl: when the sweep deletes it (null: never).
  `ALTER TABLE ${AGENT_SCHEMA}.threads ADD COLUMN IF NOT EXISTS expires_at timestamptz`,
  `CREATE INDEX IF NOT EXISTS threads_expires ON ${AGENT_SCHEMA}.threads (expires_at) WHERE expires_at IS NOT NULL`,
  `CREATE TABLE IF NOT EXISTS ${AGENT_SCHEMA}.runs (
     run_id uuid PRIMARY KEY,
     thread_id uuid NOT NULL REFERENCES ${AGENT_SCHEMA}.threads (thread_id) ON DELETE CASCADE,
     assistant_id uuid NOT NULL,
     graph_id text NOT NULL,
     status text NOT NULL,
     metadata jsonb NOT NULL DEFAULT '{}',
     kwargs jsonb NOT NULL DEFAULT '{}',
     multitask_strategy text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
     updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
     available_at timestamptz NOT NULL DEFAULT clock_timestamp(),
     attempt integer NOT NULL DEFAULT 0,
     lease_owner text,
     lease_expires timestamptz,
     cancel_action text,
     base_checkpoint_id text,
     has_base boolean NOT NULL DEFAULT false,
     result jsonb,
     error jsonb)`,
  `CREATE INDEX IF NOT EXISTS runs_pending ON ${AGENT_SCHEMA}.runs (created_at) WHERE status = 'pending'`,
  `CREATE INDEX IF NOT EXISTS runs_thread ON ${AGENT_SCHEMA}.runs (thread_id, created_at)`,
  `CREATE INDEX IF NOT EXISTS runs_lease ON ${AGENT_SCHEMA}.runs (lease_expires) WHERE status = 'running'`,
  `CREATE TABLE IF NOT EXISTS ${AGENT_SCHEMA}.run_events (
     run_id uuid NOT NULL REFERENCES ${AGENT_SCHEMA}.runs (run_id) ON DELETE CASCADE,
     seq integer NOT NULL,
     event text NOT NULL,
     data text NOT NULL,
     PRIMARY KEY (run_id, seq))`,
  // Every version of an assistant; the assistants row is the current one (PATCH adds a version, /latest picks one).
  `CREATE TABLE IF NOT EXISTS ${AGENT_SCHEMA}.assistant_versions (
     assistant_id uuid NOT NULL REFERENCES ${AGENT_SCHEMA}.assistants (assistant_id) ON DELETE CASCADE,
     version integer NOT NULL,
     graph_id text NOT NULL,
     name text NOT NULL,
     description text,
     config jsonb NOT NULL DEFAULT '{}',
     context jsonb NOT NULL DEFAULT '{}',
     metadata jsonb NOT NULL DEFAULT '{}',
     created_at timestamptz NOT NULL DEFAULT now(),
     PRIMARY KEY (assistant_id, version))`,
  `INSERT INTO ${AGENT_SCHEMA}.assistant_versions (assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
     SELECT assistant_id, version, graph_id, name, description, config, context, metadata, updated_at FROM ${AGENT_SCHEMA}.assistants
     ON CONFLICT DO NOTHING`,
  // The Store API's items (client.store.*). ttl_minutes is kept so that a read can push expires_at back.
  `CREATE TABLE IF NOT EXISTS ${AGENT_SCHEMA}.store_items (
     namespace text[] NOT NULL,
     key text NOT NULL,
     value jsonb NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now(),
     ttl_minutes double precision,
     expires_at timestamptz,
     PRIMARY KEY (namespace, key))`,
  `CREATE INDEX IF NOT EXISTS store_items_expires ON ${AGENT_SCHEMA}.store_items (expires_at) WHERE expires_at IS NOT NULL`,
  // Crons (client.crons.*): a schedule and the run payload to create at each firing. A thread cron goes with
  // its thread; a stateless one (thread_id null) runs on a new thread each time.
  `CREATE TABLE IF NOT EXISTS ${AGENT_SCHEMA}.crons (
     cron_id uuid PRIMARY KEY,
     assistant_id uuid NOT NULL REFERENCES ${AGENT_SCHEMA}.assistants (assistant_id) ON DELETE CASCADE,
     thread_id uuid REFERENCES ${AGENT_SCHEMA}.threads (thread_id) ON DELETE CASCADE,
     user_id text,
     schedule text NOT NULL,
     payload jsonb NOT NULL,
     metadata jsonb NOT NULL DEFAULT '{}',
     on_run_completed text,
     enabled boolean NOT NULL DEFAULT true,
     end_time timestamptz,
     next_run_date timestamptz NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now())`,
  `CREATE INDEX IF NOT EXISTS crons_due ON ${AGENT_SCHEMA}.crons (next_run_date) WHERE enabled`,
  `CREATE INDEX IF NOT EXISTS crons_thread ON ${AGENT_SCHEMA}.crons (thread_id) WHERE thread_id IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS crons_assistant ON ${AGENT_SCHEMA}.crons (assistant_id)`,
];

/** Creates the agent server's tables (idempotent) and the checkpointer's, under one advisory lock. */
export async function migrateAgentSchema(pool: Pool, setupCheckpointer: () => Promise<void>): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      for (const sql of STATEMENTS) await client.query(sql);
      await setupCheckpointer();
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    client.release();
  }
}
