import type { AgentThread, AgentThreadCount, AgentThreadSearch, AgentThreadStatus } from '@th/contracts';
import { S, CHANNELS, type ThreadRow, toThread, THREAD_COLUMNS, json, AgentDb } from './agent.repository';

/** Threads, their state and checkpoints. */
export class ThreadsRepository extends AgentDb {
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
}
