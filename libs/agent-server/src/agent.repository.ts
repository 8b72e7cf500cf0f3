import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import type {
  AgentAssistant,
  AgentAssistantCreate,
  AgentAssistantCount,
  AgentAssistantSearch,
  AgentAssistantUpdate,
  AgentAssistantVersion,
  AgentAssistantVersions,
  AgentRun,
  AgentRunStatus,
  AgentThread,
  AgentThreadCount,
  AgentThreadSearch,
  AgentThreadStatus,
  MultitaskStrategy,
} from '@th/contracts';
import { AGENT_SCHEMA } from './migrations';

const S = AGENT_SCHEMA;

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

interface ThreadRow {
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

interface AssistantRow {
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

const toVersion = (a: Omit<AssistantRow, 'updated_at'>): AgentAssistantVersion => ({
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

const toAssistant = (a: AssistantRow): AgentAssistant => ({ ...toVersion(a), updated_at: a.updated_at.toISOString() });

/** Copies the assistants row (its current version) into assistant_versions. */
const SNAPSHOT_VERSION = `INSERT INTO ${S}.assistant_versions (assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
  SELECT assistant_id, version, graph_id, name, description, config, context, metadata, updated_at FROM ${S}.assistants WHERE assistant_id = $1
  ON CONFLICT DO NOTHING`;

/**
 * Explicit column lists for the prepared (named) statements: a prepared `SELECT *` or `RETURNING *` fails
 * ("cached plan must not change result type") in running processes once a migration adds a column.
 */
const RUN_COLUMNS =
  'run_id, thread_id, assistant_id, graph_id, status, metadata, kwargs, multitask_strategy, created_at, updated_at, attempt, lease_owner, cancel_action, base_checkpoint_id, has_base, result, error';
const THREAD_COLUMNS =
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

const POSITION = `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

const toThreadRun = (row: RunRow & { x_position: string }): ThreadRun => {
  const { x_position, ...run } = row;
  return { run, position: { run_id: run.run_id, position: x_position } };
};

const json = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));

/** The only code that speaks SQL for assistants, threads, runs, the run queue and run events. */
export class AgentRepository {
  constructor(readonly pool: Pool) {}

  /** A hot statement, prepared once per connection (saves the server parsing and planning it every time). */
  private named<T extends QueryResultRow>(name: string, text: string, values: unknown[]): Promise<QueryResult<T>> {
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

  // --- assistants ----------------------------------------------------------------------------

  async ensureDefaultAssistants(graphs: { graphId: string; assistantId: string }[]): Promise<void> {
    for (const g of graphs) {
      await this.pool.query(
        `INSERT INTO ${S}.assistants (assistant_id, graph_id, name, metadata) VALUES ($1, $2, $2, '{"created_by":"system"}')
         ON CONFLICT (assistant_id) DO NOTHING`,
        [g.assistantId, g.graphId],
      );
      await this.pool.query(SNAPSHOT_VERSION, [g.assistantId]);
    }
  }

  async createAssistant(id: string, a: AgentAssistantCreate): Promise<AgentAssistant | null> {
    // One statement: the assistant and its version 1.
    const sql = `WITH ins AS (INSERT INTO ${S}.assistants (assistant_id, graph_id, name, description, config, context, metadata)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (assistant_id) DO NOTHING RETURNING *),
     v AS (INSERT INTO ${S}.assistant_versions (assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
       SELECT assistant_id, version, graph_id, name, description, config, context, metadata, updated_at FROM ins)
     SELECT * FROM ins`;
    const r = await this.pool.query<AssistantRow>(sql, [
      id,
      a.graph_id,
      a.name ?? a.graph_id,
      a.description ?? null,
      json(a.config ?? {}),
      json(a.context ?? {}),
      json(a.metadata ?? {}),
    ]);
    return r.rows[0] ? toAssistant(r.rows[0]) : null;
  }

  async getAssistant(id: string): Promise<AgentAssistant | null> {
    const r = await this.pool.query<AssistantRow>(`SELECT * FROM ${S}.assistants WHERE assistant_id = $1`, [id]);
    return r.rows[0] ? toAssistant(r.rows[0]) : null;
  }

  /**
   * Stores a change as a new version (the highest so far plus one) and makes it current, in one
   * transaction under the assistant's row lock. Null when the assistant does not exist.
   */
  async updateAssistant(id: string, u: AgentAssistantUpdate): Promise<AgentAssistant | null> {
    return this.tx(async (c) => {
      const cur = await c.query<AssistantRow>(`SELECT * FROM ${S}.assistants WHERE assistant_id = $1 FOR UPDATE`, [id]);
      if (!cur.rowCount) return null;
      const a = cur.rows[0];
      const max = await c.query<{ v: number }>(`SELECT COALESCE(max(version), 0) AS v FROM ${S}.assistant_versions WHERE assistant_id = $1`, [id]);
      const version = Math.max(Number(max.rows[0].v), a.version) + 1;
      const r = await c.query<AssistantRow>(
        `UPDATE ${S}.assistants SET graph_id = $2, name = $3, description = $4, config = $5, context = $6, metadata = $7, version = $8, updated_at = now()
         WHERE assistant_id = $1 RETURNING *`,
        [
          id,
          u.graph_id ?? a.graph_id,
          u.name ?? a.name,
          u.description !== undefined ? u.description : a.description,
          json(u.config ?? a.config),
          json(u.context ?? a.context),
          json({ ...a.metadata, ...(u.metadata ?? {}) }),
          version,
        ],
      );
      await c.query(SNAPSHOT_VERSION, [id]);
      return toAssistant(r.rows[0]);
    });
  }

  /** An assistant's versions, newest first; null when the assistant does not exist. */
  async listAssistantVersions(id: string, q: AgentAssistantVersions): Promise<AgentAssistantVersion[] | null> {
    const exists = await this.pool.query(`SELECT 1 FROM ${S}.assistants WHERE assistant_id = $1`, [id]);
    if (!exists.rowCount) return null;
    const params: unknown[] = [id];
    const cond = q.metadata !== undefined ? `AND metadata @> $${params.push(json(q.metadata))}::jsonb` : '';
    const r = await this.pool.query<Omit<AssistantRow, 'updated_at'>>(
      `SELECT * FROM ${S}.assistant_versions WHERE assistant_id = $1 ${cond} ORDER BY version DESC LIMIT $${params.push(q.limit)} OFFSET $${params.push(q.offset)}`,
      params,
    );
    return r.rows.map(toVersion);
  }

  /** Makes a stored version current; 'absent' when the assistant or the version does not exist. */
  async setLatestAssistantVersion(id: string, version: number): Promise<AgentAssistant | 'no_assistant' | 'no_version'> {
    return this.tx(async (c) => {
      const cur = await c.query(`SELECT 1 FROM ${S}.assistants WHERE assistant_id = $1 FOR UPDATE`, [id]);
      if (!cur.rowCount) return 'no_assistant';
      const r = await c.query<AssistantRow>(
        `UPDATE ${S}.assistants a SET graph_id = v.graph_id, name = v.name, description = v.description, config = v.config, context = v.context,
           metadata = v.metadata, version = v.version, updated_at = now()
         FROM ${S}.assistant_versions v WHERE a.assistant_id = $1 AND v.assistant_id = $1 AND v.version = $2 RETURNING a.*`,
        [id, version],
      );
      return r.rows[0] ? toAssistant(r.rows[0]) : 'no_version';
    });
  }

  async deleteAssistant(id: string): Promise<boolean> {
    const r = await this.pool.query(`DELETE FROM ${S}.assistants WHERE assistant_id = $1`, [id]);
    return (r.rowCount ?? 0) > 0;
  }

  /** The WHERE clause of an assistant search or count (with its parameters pushed onto `params`). */
  private assistantFilter(q: AgentAssistantCount, params: unknown[]): string {
    const where: string[] = [];
    if (q.graph_id !== undefined) where.push(`graph_id = $${params.push(q.graph_id)}`);
    if (q.name !== undefined) where.push(`name ILIKE $${params.push(`%${q.name.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)}`);
    if (q.metadata !== undefined) where.push(`metadata @> $${params.push(json(q.metadata))}::jsonb`);
    return where.length ? `WHERE ${where.join(' AND ')}` : '';
  }

  async countAssistants(q: AgentAssistantCount): Promise<number> {
    const params: unknown[] = [];
    const r = await this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${S}.assistants ${this.assistantFilter(q, params)}`, params);
    return Number(r.rows[0].n);
  }

  async searchAssistants(q: AgentAssistantSearch): Promise<{ items: AgentAssistant[]; total: number }> {
    const params: unknown[] = [];
    const w = this.assistantFilter(q, params);
    const r = await this.pool.query<AssistantRow & { total: string }>(
      `SELECT *, count(*) OVER () AS total FROM ${S}.assistants ${w}
       ORDER BY ${q.sort_by} ${q.sort_order === 'desc' ? 'DESC' : 'ASC'}, assistant_id LIMIT $${params.push(q.limit)} OFFSET $${params.push(q.offset)}`,
      params,
    );
    return { items: r.rows.map(toAssistant), total: r.rows[0] ? Number(r.rows[0].total) : 0 };
  }

  // --- threads -------------------------------------------------------------------------------

  /** Inserts a thread; null when the id is taken. `ttlMinutes`: it is swept that long from now (see expiredThreads). */
  async createThread(id: string, metadata: Record<string, unknown>, stateless = false, ttlMinutes: number | null = null): Promise<AgentThread | null> {
    const r = await this.named<ThreadRow>(
      'create_thread',
      `INSERT INTO ${S}.threads (thread_id, metadata, stateless, expires_at)
       VALUES ($1, $2, $3, now() + $4::float8 * interval '1 minute') ON CONFLICT (thread_id) DO NOTHING RETURNING ${THREAD_COLUMNS}`,
      [id, json(metadata), stateless, ttlMinutes],
    );
    return r.rows[0] ? toThread(r.rows[0]) : null;
  }

  async getThreadRow(id: string): Promise<ThreadRow | null> {
    const r = await this.pool.query<ThreadRow>(`SELECT * FROM ${S}.threads WHERE thread_id = $1`, [id]);
    return r.rows[0] ?? null;
  }

  /** Merges metadata; a `ttlMinutes` sets the thread's expiry that long from now (null keeps it). */
  async patchThread(id: string, metadata: Record<string, unknown>, ttlMinutes: number | null = null): Promise<AgentThread | null> {
    const r = await this.pool.query<ThreadRow>(
      `UPDATE ${S}.threads SET metadata = metadata || $2::jsonb, updated_at = now(),
         expires_at = CASE WHEN $3::float8 IS NULL THEN expires_at ELSE now() + $3::float8 * interval '1 minute' END
       WHERE thread_id = $1 RETURNING *`,
      [id, json(metadata), ttlMinutes],
    );
    return r.rows[0] ? toThread(r.rows[0]) : null;
  }

  /** Sets a thread's graph (a new thread's, before its supersteps are applied). */
  async setThreadGraph(id: string, graphId: string): Promise<void> {
    await this.pool.query(`UPDATE ${S}.threads SET graph_id = $2 WHERE thread_id = $1`, [id, graphId]);
  }

  /** The threads whose metadata names this assistant (set by their first run, or by the client). */
  async threadsOfAssistant(assistantId: string): Promise<string[]> {
    const r = await this.pool.query<{ thread_id: string }>(
      `SELECT thread_id FROM ${S}.threads WHERE metadata->>'assistant_id' = $1 AND NOT stateless`,
      [assistantId],
    );
    return r.rows.map((row) => row.thread_id);
  }

  /** Threads whose ttl has run out, oldest expiry first. */
  async expiredThreads(limit: number): Promise<string[]> {
    const r = await this.pool.query<{ thread_id: string }>(
      `SELECT thread_id FROM ${S}.threads WHERE expires_at <= now() ORDER BY expires_at LIMIT $1`,
      [limit],
    );
    return r.rows.map((row) => row.thread_id);
  }

  /** The WHERE condition of a thread search or count (stateless runs' threads are never listed). */
  private threadFilter(q: AgentThreadCount, params: unknown[]): string {
    const where = ['NOT stateless'];
    if (q.ids !== undefined) where.push(`thread_id = ANY($${params.push(q.ids)}::uuid[])`);
    if (q.metadata !== undefined) where.push(`metadata @> $${params.push(json(q.metadata))}::jsonb`);
    if (q.values !== undefined) where.push(`"values" @> $${params.push(json(q.values))}::jsonb`);
    if (q.status !== undefined) where.push(`status = $${params.push(q.status)}`);
    return where.join(' AND ');
  }

  async countThreads(q: AgentThreadCount): Promise<number> {
    const params: unknown[] = [];
    const r = await this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${S}.threads WHERE ${this.threadFilter(q, params)}`, params);
    return Number(r.rows[0].n);
  }

  async searchThreads(q: AgentThreadSearch): Promise<AgentThread[]> {
    const params: unknown[] = [];
    const r = await this.pool.query<ThreadRow>(
      `SELECT * FROM ${S}.threads WHERE ${this.threadFilter(q, params)}
       ORDER BY ${q.sort_by} ${q.sort_order === 'asc' ? 'ASC' : 'DESC'}, thread_id LIMIT $${params.push(q.limit)} OFFSET $${params.push(q.offset)}`,
      params,
    );
    return r.rows.map(toThread);
  }

  /** Deletes a thread, its runs, run events and checkpoints; returns the runs that were running (to cancel) or null when absent. */
  async deleteThread(id: string): Promise<string[] | null> {
    return this.tx(async (c) => {
      const t = await c.query(`SELECT thread_id FROM ${S}.threads WHERE thread_id = $1 FOR UPDATE`, [id]);
      if (!t.rowCount) return null;
      const running = await c.query<{ run_id: string }>(`SELECT run_id FROM ${S}.runs WHERE thread_id = $1 AND status = 'running'`, [id]);
      await c.query(`DELETE FROM ${S}.threads WHERE thread_id = $1`, [id]);
      await this.deleteCheckpoints(c, id, null, false);
      for (const r of running.rows) await c.query(`SELECT pg_notify($1, $2)`, [CHANNELS.cancel, r.run_id]);
      return running.rows.map((r) => r.run_id);
    });
  }

  /**
   * POST /threads/{id}/copy: a new thread with the same metadata, values, config and graph and the whole
   * checkpoint history (checkpoints, channel blobs, pending writes), in one transaction; the runs stay
   * with the original. A copy of a busy thread is idle (no run of its own). Null when absent.
   */
  async copyThread(id: string, newId: string): Promise<AgentThread | null> {
    return this.tx(async (c) => {
      const t = await c.query<ThreadRow>(
        `INSERT INTO ${S}.threads (thread_id, metadata, status, "values", interrupts, config, error, graph_id)
         SELECT $2, metadata, CASE WHEN status = 'busy' THEN 'idle' ELSE status END, "values", interrupts, config, error, graph_id
         FROM ${S}.threads WHERE thread_id = $1 AND NOT stateless RETURNING ${THREAD_COLUMNS}`,
        [id, newId],
      );
      if (!t.rowCount) return null;
      // LangGraph keeps the configurable thread_id in checkpoint metadata: the copy's names the copy.
      await c.query(
        `INSERT INTO ${S}.checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata)
         SELECT $2, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,
                CASE WHEN metadata ? 'thread_id' THEN jsonb_set(metadata, '{thread_id}', to_jsonb($2::text)) ELSE metadata END
         FROM ${S}.checkpoints WHERE thread_id = $1`,
        [id, newId],
      );
      await c.query(
        `INSERT INTO ${S}.checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
         SELECT $2, checkpoint_ns, channel, version, type, blob FROM ${S}.checkpoint_blobs WHERE thread_id = $1`,
        [id, newId],
      );
      await c.query(
        `INSERT INTO ${S}.checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob)
         SELECT $2, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob FROM ${S}.checkpoint_writes WHERE thread_id = $1`,
        [id, newId],
      );
      return toThread(t.rows[0]);
    });
  }

  async setThreadValues(id: string, values: unknown): Promise<void> {
    await this.pool.query(`UPDATE ${S}.threads SET "values" = $2, state_updated_at = now(), updated_at = now() WHERE thread_id = $1`, [id, json(values)]);
  }

  /** Mirrors a state update on the thread row (its values and status), unless a run has taken the thread meanwhile. */
  async setThreadState(id: string, values: unknown, status: AgentThreadStatus): Promise<void> {
    await this.pool.query(
      `UPDATE ${S}.threads SET "values" = $2, status = CASE WHEN active_run_id IS NULL THEN $3 ELSE status END, state_updated_at = now(), updated_at = now() WHERE thread_id = $1`,
      [id, json(values), status],
    );
  }

  /**
   * Merges `metadata` into one checkpoint's metadata (the newest of the namespace when `checkpointId` is
   * null), in one statement; the patched checkpoint's id, or null when there is no such checkpoint.
   */
  async patchCheckpointMetadata(threadId: string, checkpointNs: string, checkpointId: string | null, metadata: Record<string, unknown>): Promise<string | null> {
    const r = await this.pool.query<{ checkpoint_id: string }>(
      `UPDATE ${S}.checkpoints SET metadata = metadata || $4::jsonb
       WHERE thread_id = $1 AND checkpoint_ns = $2
         AND checkpoint_id = COALESCE($3, (SELECT max(checkpoint_id) FROM ${S}.checkpoints WHERE thread_id = $1 AND checkpoint_ns = $2))
       RETURNING checkpoint_id`,
      [threadId, checkpointNs, checkpointId, json(metadata)],
    );
    return r.rows[0]?.checkpoint_id ?? null;
  }

  /** Deletes a thread's checkpoints newer than `after` (all when hasBase is false), their writes and blobs no checkpoint uses any more. */
  async deleteCheckpoints(c: PoolClient, threadId: string, after: string | null, hasBase: boolean): Promise<void> {
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

  // --- runs ----------------------------------------------------------------------------------

  /**
   * Creates a run under the thread's row lock, so concurrent creates on one thread are serialized and
   * follow the multitask strategy: reject refuses while a run is pending or running; interrupt and
   * rollback mark the active runs for cancellation (pending ones end at once); enqueue just queues.
   */
  async createRun(run: NewRun, opts: CreateRunOptions, direct: DirectClaim | null = null): Promise<CreateRunOutcome> {
    if (run.multitask_strategy === 'enqueue' && !opts.createThread && run.after_seconds <= 0) return this.enqueueRun(run, direct);
    return this.tx((c) => this.createRunIn(c, run, opts));
  }

  /**
   * The common case in one autocommitted statement: a run queued on an existing thread (enqueue needs no
   * look at the thread's active runs). The thread row is updated in the same statement, which takes its row
   * lock: creates on one thread stay serialized with the other strategies' FOR UPDATE.
   *
   * With `direct`, the run is taken by the calling process at once (status running, its lease, attempt 1)
   * when the thread is idle: no run executing (active_run_id, re-checked on the newest row version when
   * another transaction changed it meanwhile) and none queued (status not busy: every create marks the
   * thread busy until its runs have ended). Otherwise it is queued and the workers are notified as usual.
   */
  private async enqueueRun(run: NewRun, direct: DirectClaim | null): Promise<CreateRunOutcome> {
    const r = await this.named<RunRow & { x_notified: unknown }>(
      'enqueue_run',
      `WITH ut AS (
         UPDATE ${S}.threads SET status = 'busy', graph_id = $4::text, updated_at = now(),
           metadata = metadata || jsonb_strip_nulls(jsonb_build_object(
             'graph_id', CASE WHEN metadata ? 'graph_id' THEN NULL ELSE $4::text END,
             'assistant_id', CASE WHEN metadata ? 'assistant_id' THEN NULL ELSE $3::uuid::text END)),
           active_run_id = CASE WHEN $9::text IS NOT NULL AND active_run_id IS NULL AND status <> 'busy'
             AND NOT EXISTS (SELECT 1 FROM ${S}.runs r WHERE r.thread_id = $2::uuid AND r.status IN ('pending', 'running')) THEN $1::uuid ELSE active_run_id END
         WHERE thread_id = $2::uuid RETURNING active_run_id IS NOT DISTINCT FROM $1::uuid AS direct),
       ins AS (
         INSERT INTO ${S}.runs (run_id, thread_id, assistant_id, graph_id, status, metadata, kwargs, multitask_strategy, attempt, lease_owner, lease_expires, base_checkpoint_id, has_base)
         SELECT $1::uuid, $2::uuid, $3::uuid, $4::text, CASE WHEN ut.direct THEN 'running' ELSE 'pending' END, $5::jsonb, $6::jsonb, $7::text,
           CASE WHEN ut.direct THEN 1 ELSE 0 END,
           CASE WHEN ut.direct THEN $9::text END,
           CASE WHEN ut.direct THEN clock_timestamp() + make_interval(secs => $10) END,
           CASE WHEN ut.direct THEN (SELECT max(k.checkpoint_id) FROM ${S}.checkpoints k WHERE k.thread_id = $2::uuid::text AND k.checkpoint_ns = '') END,
           ut.direct AND EXISTS (SELECT 1 FROM ${S}.checkpoints k WHERE k.thread_id = $2::uuid::text AND k.checkpoint_ns = '')
         FROM ut RETURNING ${RUN_COLUMNS})
       SELECT ins.*, CASE WHEN ins.status = 'pending' THEN pg_notify($8::text, '') END AS x_notified FROM ins`,
      [run.run_id, run.thread_id, run.assistant_id, run.graph_id, json(run.metadata), json(run.kwargs), run.multitask_strategy, CHANNELS.pending, direct?.owner ?? null, direct?.leaseSeconds ?? 0],
    );
    const row = r.rows[0];
    if (!row) return { kind: 'thread_missing' };
    delete (row as Partial<typeof row>).x_notified;
    return { kind: 'created', run: row, cancelled: [], ended: [] };
  }

  /** Creates several runs in one transaction: all of them or, on any failure, none. */
  async createRuns(runs: { run: NewRun; opts: CreateRunOptions }[]): Promise<CreateRunOutcome[]> {
    return this.tx(async (c) => {
      const out: CreateRunOutcome[] = [];
      for (const r of runs) out.push(await this.createRunIn(c, r.run, r.opts));
      return out;
    });
  }

  private async createRunIn(c: PoolClient, run: NewRun, opts: CreateRunOptions): Promise<CreateRunOutcome> {
    if (opts.createThread) {
      await c.query(`INSERT INTO ${S}.threads (thread_id, metadata, stateless) VALUES ($1, $2, $3) ON CONFLICT (thread_id) DO NOTHING`, [
        run.thread_id,
        json(opts.threadMetadata),
        opts.stateless,
      ]);
    }
    // The thread's row lock serializes run creation on one thread. The active runs are read by a second
    // statement: its snapshot is taken after the lock is granted, so it sees a run a concurrent create just committed.
    const t = await c.query<{ metadata: Record<string, unknown> }>(`SELECT metadata FROM ${S}.threads WHERE thread_id = $1 FOR UPDATE`, [run.thread_id]);
    if (!t.rowCount) return { kind: 'thread_missing' };
    const active = await c.query<{ run_id: string; status: AgentRunStatus }>(
      `SELECT run_id, status FROM ${S}.runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY created_at`,
      [run.thread_id],
    );
    const cancelled: string[] = [];
    const ended: RunRow[] = [];
    if (active.rowCount) {
      if (run.multitask_strategy === 'reject') return { kind: 'busy' };
      if (run.multitask_strategy === 'interrupt' || run.multitask_strategy === 'rollback') {
        for (const a of active.rows) {
          cancelled.push(a.run_id);
          if (a.status === 'pending') {
            if (run.multitask_strategy === 'rollback') await c.query(`DELETE FROM ${S}.runs WHERE run_id = $1`, [a.run_id]);
            else ended.push(...(await c.query<RunRow>(`UPDATE ${S}.runs SET status = 'interrupted', updated_at = now() WHERE run_id = $1 RETURNING ${RUN_COLUMNS}`, [a.run_id])).rows);
            await c.query(`SELECT pg_notify($1, $2)`, [CHANNELS.done, a.run_id]);
          } else {
            await c.query(`UPDATE ${S}.runs SET cancel_action = $2, updated_at = now() WHERE run_id = $1`, [a.run_id, run.multitask_strategy]);
            await c.query(`SELECT pg_notify($1, $2)`, [CHANNELS.cancel, a.run_id]);
          }
        }
      }
    }
    const meta = t.rows[0].metadata;
    const patch: Record<string, unknown> = {};
    if (meta.graph_id === undefined) patch.graph_id = run.graph_id;
    if (meta.assistant_id === undefined) patch.assistant_id = run.assistant_id;
    const ins = await c.query<RunRow>(
      `WITH ins AS (
         INSERT INTO ${S}.runs (run_id, thread_id, assistant_id, graph_id, status, metadata, kwargs, multitask_strategy, available_at)
         VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, clock_timestamp() + make_interval(secs => $8)) RETURNING *),
       ut AS (UPDATE ${S}.threads SET status = 'busy', graph_id = $4, metadata = metadata || $9::jsonb, updated_at = now() WHERE thread_id = $2)
       SELECT ins.* FROM ins CROSS JOIN (SELECT pg_notify($10, '')) n`,
      [run.run_id, run.thread_id, run.assistant_id, run.graph_id, json(run.metadata), json(run.kwargs), run.multitask_strategy, run.after_seconds, json(patch), CHANNELS.pending],
    );
    return { kind: 'created', run: ins.rows[0], cancelled, ended };
  }

  async getRun(threadId: string | null, runId: string): Promise<RunRow | null> {
    const r =
      threadId === null
        ? await this.named<RunRow>('get_run', `SELECT ${RUN_COLUMNS} FROM ${S}.runs WHERE run_id = $1`, [runId])
        : await this.named<RunRow>('get_thread_run', `SELECT ${RUN_COLUMNS} FROM ${S}.runs WHERE run_id = $1 AND thread_id = $2`, [runId, threadId]);
    return r.rows[0] ?? null;
  }

  async listRuns(threadId: string, limit: number, offset: number, status?: AgentRunStatus): Promise<RunRow[]> {
    const params: unknown[] = [threadId];
    const cond = status ? `AND status = $${params.push(status)}` : '';
    const r = await this.pool.query<RunRow>(
      `SELECT * FROM ${S}.runs WHERE thread_id = $1 ${cond} ORDER BY created_at DESC, run_id LIMIT $${params.push(limit)} OFFSET $${params.push(offset)}`,
      params,
    );
    return r.rows;
  }

  /** Cancels one run: a pending run ends now (interrupted, or deleted for rollback); a running one is signalled. */
  async cancelRun(threadId: string, runId: string, action: 'interrupt' | 'rollback'): Promise<'absent' | 'done' | 'signalled' | 'ended'> {
    return this.tx(async (c) => {
      const r = await c.query<{ status: AgentRunStatus }>(`SELECT status FROM ${S}.runs WHERE run_id = $1 AND thread_id = $2 FOR UPDATE`, [runId, threadId]);
      if (!r.rowCount) return 'absent';
      const status = r.rows[0].status;
      if (status === 'pending') {
        if (action === 'rollback') await c.query(`DELETE FROM ${S}.runs WHERE run_id = $1`, [runId]);
        else await c.query(`UPDATE ${S}.runs SET status = 'interrupted', updated_at = now() WHERE run_id = $1`, [runId]);
        await this.settleThread(c, threadId);
        await c.query(`SELECT pg_notify($1, $2)`, [CHANNELS.done, runId]);
        return 'done';
      }
      if (status === 'running') {
        await c.query(`UPDATE ${S}.runs SET cancel_action = $2, updated_at = now() WHERE run_id = $1`, [runId, action]);
        await c.query(`SELECT pg_notify($1, $2)`, [CHANNELS.cancel, runId]);
        return 'signalled';
      }
      return 'ended';
    });
  }

  /** Recomputes a thread's status when no run is executing on it. */
  private async settleThread(c: PoolClient, threadId: string): Promise<void> {
    await c.query(
      `UPDATE ${S}.threads SET status = CASE WHEN EXISTS (SELECT 1 FROM ${S}.runs WHERE thread_id = $1 AND status IN ('pending', 'running')) THEN 'busy'
         WHEN status = 'busy' THEN 'idle' ELSE status END, updated_at = now() WHERE thread_id = $1 AND active_run_id IS NULL`,
      [threadId],
    );
  }

  async deleteRun(threadId: string, runId: string): Promise<'absent' | 'active' | 'deleted'> {
    return this.tx(async (c) => {
      const r = await c.query<{ status: AgentRunStatus }>(`SELECT status FROM ${S}.runs WHERE run_id = $1 AND thread_id = $2 FOR UPDATE`, [runId, threadId]);
      if (!r.rowCount) return 'absent';
      if (r.rows[0].status === 'pending' || r.rows[0].status === 'running') return 'active';
      await c.query(`DELETE FROM ${S}.runs WHERE run_id = $1`, [runId]);
      return 'deleted';
    });
  }

  // --- a thread's runs in order (thread streams) -------------------------------------------------

  /** The oldest run of the thread not ended yet (the one running, or next to run). */
  async firstActiveThreadRun(threadId: string): Promise<ThreadRun | null> {
    const r = await this.pool.query<RunRow & { x_position: string }>(
      `SELECT ${RUN_COLUMNS}, ${POSITION} AS x_position FROM ${S}.runs WHERE thread_id = $1 AND status IN ('pending', 'running')
       ORDER BY created_at, run_id LIMIT 1`,
      [threadId],
    );
    return r.rows[0] ? toThreadRun(r.rows[0]) : null;
  }

  /** The position of the thread's newest run (null when it has none): a stream that starts there sees only later runs. */
  async latestThreadRunPosition(threadId: string): Promise<ThreadRunPosition | null> {
    const r = await this.pool.query<ThreadRunPosition>(
      `SELECT run_id, ${POSITION} AS position FROM ${S}.runs WHERE thread_id = $1 ORDER BY created_at DESC, run_id DESC LIMIT 1`,
      [threadId],
    );
    return r.rows[0] ?? null;
  }

  /** One run of the thread with its position; null when it is not (or no longer) there. */
  async threadRun(threadId: string, runId: string): Promise<ThreadRun | null> {
    const r = await this.pool.query<RunRow & { x_position: string }>(
      `SELECT ${RUN_COLUMNS}, ${POSITION} AS x_position FROM ${S}.runs WHERE thread_id = $1 AND run_id = $2`,
      [threadId, runId],
    );
    return r.rows[0] ? toThreadRun(r.rows[0]) : null;
  }

  /**
   * The thread's first run created after `after` (its first run when null), whatever its status; `run` null
   * when there is none yet. Null when the thread does not exist (any more).
   */
  async nextThreadRun(threadId: string, after: ThreadRunPosition | null): Promise<{ run: ThreadRun | null } | null> {
    const r = await this.pool.query<RunRow & { x_thread: string; x_position: string | null }>(
      `SELECT t.thread_id AS x_thread, r.* FROM ${S}.threads t LEFT JOIN LATERAL (
         SELECT ${RUN_COLUMNS}, ${POSITION} AS x_position FROM ${S}.runs
         WHERE thread_id = t.thread_id AND ($2::timestamptz IS NULL OR (created_at, run_id) > ($2::timestamptz, $3::uuid))
         ORDER BY created_at, run_id LIMIT 1) r ON true
       WHERE t.thread_id = $1`,
      [threadId, after?.position ?? null, after?.run_id ?? null],
    );
    const row = r.rows[0];
    if (!row) return null;
    delete (row as Partial<typeof row>).x_thread;
    return { run: row.run_id === null ? null : toThreadRun(row as RunRow & { x_position: string }) };
  }

  // --- the queue -----------------------------------------------------------------------------

  /**
   * Takes up to `n` runnable runs: pending, due, on a thread with no executing run. Thread and run rows
   * are locked with SKIP LOCKED so concurrent workers never take the same run or two runs of one thread.
   * A retried run first loses what its earlier attempt wrote.
   */
  async claim(owner: string, n: number, leaseSeconds: number): Promise<{ runs: RunRow[]; skipped: boolean; nextDue: Date | null }> {
    // One statement: candidates locked (SKIP LOCKED), the oldest per thread taken, the threads marked,
    // plus what the caller needs to know without another round trip: whether runnable runs were passed
    // over because another transaction held them, and when the next delayed run is due.
    const r = await this.pool.query<RunRow & { x_runnable: string; x_next_due: Date | null }>(
      `WITH cand AS (
         SELECT r.run_id, r.thread_id, r.created_at FROM ${S}.runs r JOIN ${S}.threads t ON t.thread_id = r.thread_id
         WHERE r.status = 'pending' AND t.active_run_id IS NULL AND r.available_at <= clock_timestamp()
         ORDER BY r.created_at LIMIT $1 * 2 FOR UPDATE OF r, t SKIP LOCKED),
       pick AS (
         SELECT run_id, thread_id FROM (SELECT DISTINCT ON (thread_id) run_id, thread_id, created_at FROM cand ORDER BY thread_id, created_at) x
         ORDER BY created_at LIMIT $1),
       ur AS (
         UPDATE ${S}.runs r SET status = 'running', attempt = r.attempt + 1, lease_owner = $2, updated_at = now(),
           lease_expires = clock_timestamp() + make_interval(secs => $3),
           base_checkpoint_id = CASE WHEN r.attempt = 0 THEN (SELECT max(k.checkpoint_id) FROM ${S}.checkpoints k WHERE k.thread_id = r.thread_id::text AND k.checkpoint_ns = '') ELSE r.base_checkpoint_id END,
           has_base = CASE WHEN r.attempt = 0 THEN EXISTS (SELECT 1 FROM ${S}.checkpoints k WHERE k.thread_id = r.thread_id::text AND k.checkpoint_ns = '') ELSE r.has_base END
         FROM pick WHERE r.run_id = pick.run_id RETURNING r.*),
       ut AS (
         UPDATE ${S}.threads t SET active_run_id = pick.run_id, status = 'busy', updated_at = now() FROM pick WHERE t.thread_id = pick.thread_id)
       SELECT ur.*, x.runnable AS x_runnable, x.next_due AS x_next_due FROM (
         SELECT (SELECT count(*) FROM ${S}.runs r JOIN ${S}.threads t ON t.thread_id = r.thread_id
                 WHERE r.status = 'pending' AND t.active_run_id IS NULL AND r.available_at <= clock_timestamp()) AS runnable,
                (SELECT min(available_at) FROM ${S}.runs WHERE status = 'pending' AND available_at > clock_timestamp()) AS next_due) x
       LEFT JOIN ur ON true`,
      [n, owner, leaseSeconds],
    );
    const runs = r.rows.filter((row) => row.run_id !== null);
    for (const row of runs) {
      delete (row as Partial<typeof row>).x_runnable;
      delete (row as Partial<typeof row>).x_next_due;
    }
    const runnable = Number(r.rows[0]?.x_runnable ?? 0);
    const distinctThreads = runnable; // upper bound: a count of runnable runs (several may share a thread)
    for (const run of runs) {
      if (run.attempt > 1) {
        // a retried run first loses what its earlier attempt wrote
        await this.tx(async (c) => {
          await this.deleteCheckpoints(c, run.thread_id, run.base_checkpoint_id, run.has_base);
          await c.query(`DELETE FROM ${S}.run_events WHERE run_id = $1`, [run.run_id]);
        });
      }
    }
    return { runs, skipped: runs.length < n && distinctThreads > runs.length, nextDue: r.rows[0]?.x_next_due ?? null };
  }

  /** Extends a lease; null when this worker no longer owns the run (lost lease, deleted), else the pending cancel action. */
  async renewLease(runId: string, owner: string, attempt: number, leaseSeconds: number): Promise<{ cancel_action: RunRow['cancel_action'] } | null> {
    const r = await this.pool.query<{ cancel_action: RunRow['cancel_action'] }>(
      `UPDATE ${S}.runs SET lease_expires = clock_timestamp() + make_interval(secs => $4)
       WHERE run_id = $1 AND lease_owner = $2 AND attempt = $3 AND status = 'running' RETURNING cancel_action`,
      [runId, owner, attempt, leaseSeconds],
    );
    return r.rows[0] ?? null;
  }

  async cancelActionOf(runId: string): Promise<RunRow['cancel_action']> {
    const r = await this.pool.query<{ cancel_action: RunRow['cancel_action'] }>(`SELECT cancel_action FROM ${S}.runs WHERE run_id = $1`, [runId]);
    return r.rows[0]?.cancel_action ?? null;
  }

  /**
   * Ends a run this worker owns, in one transaction: the run's status and result (or, for rollback, the
   * run and everything it wrote deleted), the thread released, waiters and idle workers notified.
   * Not done when the worker had lost the run meanwhile: then nothing is written. `ended` is the run's
   * row as committed (none for rollback, which deletes it).
   */
  async finishRun(run: RunRow, owner: string, outcome: FinishOutcome | { status: 'rollback' }): Promise<{ done: boolean; ended: RunRow | null }> {
    if (outcome.status !== 'rollback') {
      // A successful run's result is its values: serialize them once.
      const values = json(outcome.values);
      const result = outcome.result === outcome.values ? values : json(outcome.result);
      // One autocommitted statement: the run's end, the thread released, waiters and idle workers notified.
      const r = await this.named<RunRow & { x_done: unknown; x_next: unknown }>(
        'finish_run',
        `WITH ur AS (
           UPDATE ${S}.runs SET status = $4, result = $5, error = $6, updated_at = now(), lease_owner = NULL, lease_expires = NULL
           WHERE run_id = $1 AND lease_owner = $2 AND attempt = $3 AND status = 'running' RETURNING ${RUN_COLUMNS}),
         nxt AS (SELECT EXISTS (SELECT 1 FROM ${S}.runs WHERE thread_id = $7 AND status = 'pending') AS pending),
         ut AS (
           UPDATE ${S}.threads SET active_run_id = NULL, updated_at = now(), state_updated_at = now(), "values" = COALESCE($8, "values"), interrupts = $9, error = $6,
             status = CASE WHEN (SELECT pending FROM nxt) THEN 'busy' ELSE $10 END
           WHERE thread_id IN (SELECT thread_id FROM ur))
         SELECT ur.*, pg_notify($11, $1::text) AS x_done, CASE WHEN (SELECT pending FROM nxt) THEN pg_notify($12, '') END AS x_next FROM ur`,
        [
          run.run_id,
          owner,
          run.attempt,
          outcome.status,
          result,
          json(outcome.error),
          run.thread_id,
          values,
          json(outcome.interrupts),
          outcome.threadStatus,
          CHANNELS.done,
          CHANNELS.pending,
        ],
      );
      const ended = r.rows[0] ?? null;
      if (ended) {
        delete (ended as Partial<typeof ended>).x_done;
        delete (ended as Partial<typeof ended>).x_next;
      }
      return { done: !!ended, ended };
    }
    const done = await this.tx(async (c) => {
      const own = await c.query(`SELECT 1 FROM ${S}.runs WHERE run_id = $1 AND lease_owner = $2 AND attempt = $3 AND status = 'running' FOR UPDATE`, [
        run.run_id,
        owner,
        run.attempt,
      ]);
      if (!own.rowCount) return false;
      await c.query(`DELETE FROM ${S}.runs WHERE run_id = $1`, [run.run_id]);
      await this.deleteCheckpoints(c, run.thread_id, run.base_checkpoint_id, run.has_base);
      await c.query(
        `UPDATE ${S}.threads SET active_run_id = NULL, updated_at = now(), state_updated_at = now(),
           "values" = (SELECT r.result FROM ${S}.runs r WHERE r.thread_id = $1 AND r.status IN ('success', 'interrupted') ORDER BY r.created_at DESC LIMIT 1),
           status = CASE WHEN EXISTS (SELECT 1 FROM ${S}.runs WHERE thread_id = $1 AND status = 'pending') THEN 'busy' ELSE 'idle' END
         WHERE thread_id = $1`,
        [run.thread_id],
      );
      const next = await c.query(`SELECT 1 FROM ${S}.runs WHERE thread_id = $1 AND status = 'pending' LIMIT 1`, [run.thread_id]);
      if (next.rowCount) await c.query(`SELECT pg_notify($1, '')`, [CHANNELS.pending]);
      await c.query(`SELECT pg_notify($1, $2)`, [CHANNELS.done, run.run_id]);
      return true;
    });
    return { done, ended: null };
  }

  /** Puts a run back in the queue without counting the attempt (graceful shutdown of its worker). */
  async releaseRun(run: RunRow, owner: string): Promise<void> {
    await this.tx(async (c) => {
      const r = await c.query(
        `UPDATE ${S}.runs SET status = 'pending', lease_owner = NULL, lease_expires = NULL, updated_at = now()
         WHERE run_id = $1 AND lease_owner = $2 AND attempt = $3 AND status = 'running'`,
        [run.run_id, owner, run.attempt],
      );
      if (r.rowCount) {
        await c.query(`UPDATE ${S}.threads SET active_run_id = NULL WHERE thread_id = $1 AND active_run_id = $2`, [run.thread_id, run.run_id]);
        await c.query(`SELECT pg_notify($1, '')`, [CHANNELS.pending]);
      }
    });
  }

  /**
   * Runs whose lease lapsed (their worker died): back to pending while attempts remain, else error.
   * Returns how many were requeued, and the rows of those failed.
   */
  async reapExpired(maxAttempts: number): Promise<{ requeued: number; failed: RunRow[] }> {
    return this.tx(async (c) => {
      const expired = await c.query<{ run_id: string; thread_id: string; attempt: number }>(
        `SELECT run_id, thread_id, attempt FROM ${S}.runs WHERE status = 'running' AND lease_expires < clock_timestamp() FOR UPDATE SKIP LOCKED`,
      );
      let requeued = 0;
      const failed: RunRow[] = [];
      for (const r of expired.rows) {
        if (r.attempt < maxAttempts) {
          await c.query(`UPDATE ${S}.runs SET status = 'pending', lease_owner = NULL, lease_expires = NULL, updated_at = now() WHERE run_id = $1`, [r.run_id]);
          requeued++;
        } else {
          const error = { error: 'WorkerLost', message: `the worker executing this run stopped responding (attempt ${r.attempt} of ${maxAttempts})` };
          const ended = await c.query<RunRow>(
            `UPDATE ${S}.runs SET status = 'error', error = $2, lease_owner = NULL, lease_expires = NULL, updated_at = now() WHERE run_id = $1 RETURNING ${RUN_COLUMNS}`,
            [r.run_id, json(error)],
          );
          await c.query(`SELECT pg_notify($1, $2)`, [CHANNELS.done, r.run_id]);
          failed.push(...ended.rows);
        }
        await c.query(
          `UPDATE ${S}.threads SET active_run_id = NULL, updated_at = now(),
             status = CASE WHEN EXISTS (SELECT 1 FROM ${S}.runs WHERE thread_id = $1 AND status = 'pending') THEN 'busy' ELSE 'error' END
           WHERE thread_id = $1 AND active_run_id = $2`,
          [r.thread_id, r.run_id],
        );
      }
      if (requeued) await c.query(`SELECT pg_notify($1, '')`, [CHANNELS.pending]);
      return { requeued, failed };
    });
  }

  // --- run events (stream replay) --------------------------------------------------------------

  async appendEvents(runId: string, events: { seq: number; event: string; data: string }[]): Promise<void> {
    if (!events.length) return;
    await this.pool.query(
      `WITH ins AS (INSERT INTO ${S}.run_events (run_id, seq, event, data)
         SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[]) ON CONFLICT DO NOTHING RETURNING 1)
       SELECT pg_notify($5, $1::text) FROM (SELECT count(*) FROM ins) x`,
      [runId, events.map((e) => e.seq), events.map((e) => e.event), events.map((e) => e.data), CHANNELS.events],
    );
  }

  async readEvents(runId: string, afterSeq: number): Promise<{ seq: number; event: string; data: string }[]> {
    const r = await this.pool.query<{ seq: number; event: string; data: string }>(
      `SELECT seq, event, data FROM ${S}.run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT 1000`,
      [runId, afterSeq],
    );
    return r.rows;
  }
}
