import type { PoolClient } from 'pg';
import type { AgentRunStatus } from '@th/contracts';
import { S, CHANNELS, type RunRow, type NewRun, type CreateRunOptions, type CreateRunOutcome, type DirectClaim, RUN_COLUMNS, type ThreadRunPosition, type ThreadRun, POSITION, toThreadRun, json, AgentDb } from './agent.repository';

/** Runs: creation under the multitask strategy, reads, cancellation, a thread's runs in order, run events. */
export class RunsRepository extends AgentDb {
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
