import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import type {
  AgentAssistant,
  AgentAssistantVersion,
  AgentRun,
  AgentRunStatus,
  AgentThread,
  AgentThreadStatus,
  MultitaskStrategy,
} from '@th/contracts';
import { AGENT_SCHEMA } from './migrations';

export const S = AGENT_SCHEMA;

/** Channels the processes sharing one database notify each other on. */
export const CHANNELS = {
  pending: 'agent_run_pending',
  done: 'agent_run_done',
  cancel: 'agent_run_cancel',
  events: 'agent_run_events',
} as const;

export interface RunRow {
  run_id: string;
  thread_id: string;
  assistant_id: string;
  graph_id: string;
  status: AgentRunStatus;
  metadata: Record<string, unknown>;
  kwargs: Record<string, unknown>;
  multitask_strategy: MultitaskStrategy;
  created_at: Date;
  updated_at: Date;
  attempt: number;
  lease_owner: string | null;
  cancel_action: 'interrupt' | 'rollback' | null;
  base_checkpoint_id: string | null;
  has_base: boolean;
  result: unknown;
  error: { error: string; message: string } | null;
}

export interface ThreadRow {
  thread_id: string;
  created_at: Date;
  updated_at: Date;
  state_updated_at: Date;
  metadata: Record<string, unknown>;
  status: AgentThreadStatus;
  values: unknown;
  interrupts: Record<string, unknown>;
  config: Record<string, unknown>;
  error: unknown;
  graph_id: string | null;
  active_run_id: string | null;
  stateless: boolean;
}

export interface AssistantRow {
  assistant_id: string;
  graph_id: string;
  name: string;
  description: string | null;
  config: Record<string, unknown>;
  context: Record<string, unknown>;
  metadata: Record<string, unknown>;
  version: number;
  created_at: Date;
  updated_at: Date;
}

export interface NewRun {
  run_id: string;
  thread_id: string;
  assistant_id: string;
  graph_id: string;
  metadata: Record<string, unknown>;
  kwargs: Record<string, unknown>;
  multitask_strategy: MultitaskStrategy;
  after_seconds: number;
}

export interface CreateRunOptions {
  createThread: boolean;
  stateless: boolean;
  threadMetadata: Record<string, unknown>;
}

export type CreateRunOutcome =
  /** cancelled: the runs a multitask strategy stopped; ended: those of them that ended at once (pending runs interrupted). */
  | { kind: 'created'; run: RunRow; cancelled: string[]; ended: RunRow[] }
  | { kind: 'thread_missing' }
  | { kind: 'busy' };

/** Lets the creating process take a new run itself (see createRun). */
export interface DirectClaim {
  owner: string;
  leaseSeconds: number;
}

export type FinishOutcome = { status: AgentRunStatus; threadStatus: AgentThreadStatus; result: unknown; error: RunRow['error']; values: unknown; interrupts: Record<string, unknown> };

export const toRun = (r: RunRow): AgentRun => ({
  run_id: r.run_id,
  thread_id: r.thread_id,
  assistant_id: r.assistant_id,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
  status: r.status,
  metadata: r.metadata,
  kwargs: r.kwargs,
  multitask_strategy: r.multitask_strategy,
});

export const toThread = (t: ThreadRow): AgentThread => ({
  thread_id: t.thread_id,
  created_at: t.created_at.toISOString(),
  updated_at: t.updated_at.toISOString(),
  state_updated_at: t.state_updated_at.toISOString(),
  metadata: t.metadata,
  status: t.status,
  values: t.values ?? {},
  interrupts: t.interrupts,
  config: t.config,
  error: t.error ?? null,
});

export const toVersion = (a: Omit<AssistantRow, 'updated_at'>): AgentAssistantVersion => ({
  assistant_id: a.assistant_id,
  graph_id: a.graph_id,
  name: a.name,
  description: a.description,
  config: a.config,
  context: a.context,
  metadata: a.metadata,
  version: a.version,
  created_at: a.created_at.toISOString(),
});

export const toAssistant = (a: AssistantRow): AgentAssistant => ({ ...toVersion(a), updated_at: a.updated_at.toISOString() });

/** Copies the assistants row (its current version) into assistant_versions. */
export const SNAPSHOT_VERSION = `INSERT INTO ${S}.assistant_versions (assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
  SELECT assistant_id, version, graph_id, name, description, config, context, metadata, updated_at FROM ${S}.assistants WHERE assistant_id = $1
  ON CONFLICT DO NOTHING`;

/**
 * Explicit column lists for the prepared (named) statements: a prepared `SELECT *` or `RETURNING *` fails
 * ("cached plan must not change result type") in running processes once a migration adds a column.
 */
export const RUN_COLUMNS =
  'run_id, thread_id, assistant_id, graph_id, status, metadata, kwargs, multitask_strategy, created_at, updated_at, attempt, lease_owner, cancel_action, base_checkpoint_id, has_base, result, error';
export const THREAD_COLUMNS =
  'thread_id, created_at, updated_at, state_updated_at, metadata, status, "values", interrupts, config, error, graph_id, active_run_id, stateless';

/**
 * A run's place in its thread's order of creation: created_at as text to the microsecond (a JS Date
 * keeps only milliseconds, and runs created within one would compare wrongly) and the run id.
 */
export interface ThreadRunPosition {
  run_id: string;
  position: string;
}

export interface ThreadRun {
  run: RunRow;
  position: ThreadRunPosition;
}

export const POSITION = `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export const toThreadRun = (row: RunRow & { x_position: string }): ThreadRun => {
  const { x_position, ...run } = row;
  return { run, position: { run_id: run.run_id, position: x_position } };
};

export const json = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));

/** What the agent server's repositories share: the pool, prepared statements, transactions. */
export abstract class AgentDb {
  constructor(readonly pool: Pool) {}

  /** A hot statement, prepared once per connection (saves the server parsing and planning it every time). */
  protected named<T extends QueryResultRow>(name: string, text: string, values: unknown[]): Promise<QueryResult<T>> {
    return this.pool.query<T>({ name: `${S}_${name}`, text, values });
  }

  async tx<T>(fn: (c: PoolClient) => Promise<T>): Promise<T> {
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN');
      const out = await fn(c);
      await c.query('COMMIT');
      return out;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  }

  /** Deletes a thread's checkpoints newer than `after` (all when hasBase is false), their writes and blobs no checkpoint uses any more. */
  protected async deleteCheckpoints(c: PoolClient, threadId: string, after: string | null, hasBase: boolean): Promise<void> {
    const cond = hasBase ? `AND checkpoint_id > $2` : '';
    const params = hasBase ? [threadId, after] : [threadId];
    await c.query(`DELETE FROM ${S}.checkpoints WHERE thread_id = $1 ${cond}`, params);
    await c.query(`DELETE FROM ${S}.checkpoint_writes WHERE thread_id = $1 ${cond}`, params);
    await c.query(
      `DELETE FROM ${S}.checkpoint_blobs b WHERE b.thread_id = $1 AND NOT EXISTS (
         SELECT 1 FROM ${S}.checkpoints k WHERE k.thread_id = b.thread_id AND k.checkpoint_ns = b.checkpoint_ns
           AND k.checkpoint -> 'channel_versions' ->> b.channel = b.version)`,
      [threadId],
    );
  }
}
