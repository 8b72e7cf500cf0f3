import { S, CHANNELS, type RunRow, type FinishOutcome, RUN_COLUMNS, json, AgentDb } from './agent.repository';

/** The run queue: claim, lease, finish, release, reap. */
export class RunQueueRepository extends AgentDb {
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

  /** Runs waiting to be taken (the metrics' queue depth). */
  async pendingCount(): Promise<number> {
    const r = await this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${S}.runs WHERE status = 'pending'`);
    return Number(r.rows[0]?.n ?? 0);
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
}
