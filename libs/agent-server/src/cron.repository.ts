import type { Pool } from 'pg';
import type { AgentCron, AgentCronCount, AgentCronSearch } from '@th/contracts';
import { AGENT_SCHEMA } from './migrations';

const S = AGENT_SCHEMA;

export interface CronRow {
  cron_id: string;
  assistant_id: string;
  thread_id: string | null;
  user_id: string | null;
  schedule: string;
  payload: Record<string, unknown>;
  metadata: Record<string, unknown>;
  on_run_completed: 'delete' | 'keep' | null;
  enabled: boolean;
  end_time: Date | null;
  next_run_date: Date;
  created_at: Date;
  updated_at: Date;
}

/** A cron to insert: the row's own columns, with end_time as the ISO text the request carried. */
export type NewCron = Omit<CronRow, 'user_id' | 'created_at' | 'updated_at' | 'end_time'> & { end_time: string | null };

/** The columns PATCH changes; absent ones are kept. `payload` is merged key by key, `metadata` merged into both copies. */
export interface CronChanges {
  schedule?: string;
  next_run_date?: Date;
  end_time?: string | null;
  payload?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  on_run_completed?: 'delete' | 'keep';
  enabled?: boolean;
}

const COLUMNS = 'cron_id, assistant_id, thread_id, user_id, schedule, payload, metadata, on_run_completed, enabled, end_time, next_run_date, created_at, updated_at';

export const toCron = (r: CronRow): AgentCron => ({
  cron_id: r.cron_id,
  assistant_id: r.assistant_id,
  thread_id: r.thread_id,
  on_run_completed: r.on_run_completed,
  end_time: r.end_time?.toISOString() ?? null,
  schedule: r.schedule,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
  payload: r.payload,
  user_id: r.user_id,
  next_run_date: r.next_run_date.toISOString(),
  metadata: r.metadata,
  enabled: r.enabled,
});

const json = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));

/** The only code that speaks SQL for crons. */
export class CronRepository {
  constructor(private readonly pool: Pool) {}

  /** Inserts a cron; a thread cron whose thread was deleted meanwhile is refused by the foreign key (null). */
  async createCron(c: NewCron): Promise<AgentCron | null> {
    const r = await this.pool.query<CronRow>(
      `INSERT INTO ${S}.crons (cron_id, assistant_id, thread_id, schedule, payload, metadata, on_run_completed, enabled, end_time, next_run_date)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
       WHERE $3::uuid IS NULL OR EXISTS (SELECT 1 FROM ${S}.threads WHERE thread_id = $3::uuid)
       RETURNING ${COLUMNS}`,
      [c.cron_id, c.assistant_id, c.thread_id, c.schedule, json(c.payload), json(c.metadata), c.on_run_completed, c.enabled, c.end_time, c.next_run_date],
    );
    return r.rows[0] ? toCron(r.rows[0]) : null;
  }

  async getCron(id: string): Promise<CronRow | null> {
    const r = await this.pool.query<CronRow>(`SELECT ${COLUMNS} FROM ${S}.crons WHERE cron_id = $1`, [id]);
    return r.rows[0] ?? null;
  }

  async updateCron(id: string, u: CronChanges): Promise<AgentCron | null> {
    const params: unknown[] = [id];
    const set = ['updated_at = now()'];
    if (u.schedule !== undefined) set.push(`schedule = $${params.push(u.schedule)}`);
    if (u.next_run_date !== undefined) set.push(`next_run_date = $${params.push(u.next_run_date)}`);
    if (u.end_time !== undefined) set.push(`end_time = $${params.push(u.end_time)}::timestamptz`);
    if (u.on_run_completed !== undefined) set.push(`on_run_completed = $${params.push(u.on_run_completed)}`);
    if (u.enabled !== undefined) set.push(`enabled = $${params.push(u.enabled)}`);
    let payload = 'payload';
    if (u.payload !== undefined) payload = `(${payload} || $${params.push(json(u.payload))}::jsonb)`;
    if (u.metadata !== undefined) {
      const m = `$${params.push(json(u.metadata))}::jsonb`;
      set.push(`metadata = metadata || ${m}`);
      payload = `jsonb_set(${payload}, '{metadata}', COALESCE(payload->'metadata', '{}'::jsonb) || ${m})`;
    }
    if (payload !== 'payload') set.push(`payload = ${payload}`);
    const r = await this.pool.query<CronRow>(`UPDATE ${S}.crons SET ${set.join(', ')} WHERE cron_id = $1 RETURNING ${COLUMNS}`, params);
    return r.rows[0] ? toCron(r.rows[0]) : null;
  }

  async deleteCron(id: string): Promise<boolean> {
    const r = await this.pool.query(`DELETE FROM ${S}.crons WHERE cron_id = $1`, [id]);
    return (r.rowCount ?? 0) > 0;
  }

  private cronFilter(q: AgentCronCount, params: unknown[]): string {
    const where = ['true'];
    if (q.assistant_id !== undefined) where.push(`assistant_id = $${params.push(q.assistant_id)}::uuid`);
    if (q.thread_id !== undefined) where.push(`thread_id = $${params.push(q.thread_id)}::uuid`);
    if (q.enabled !== undefined) where.push(`enabled = $${params.push(q.enabled)}`);
    return where.join(' AND ');
  }

  async countCrons(q: AgentCronCount): Promise<number> {
    const params: unknown[] = [];
    const r = await this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${S}.crons WHERE ${this.cronFilter(q, params)}`, params);
    return Number(r.rows[0].n);
  }

  async searchCrons(q: AgentCronSearch): Promise<AgentCron[]> {
    const params: unknown[] = [];
    // sort_by is one of the schema's enum values, never caller text
    const r = await this.pool.query<CronRow>(
      `SELECT ${COLUMNS} FROM ${S}.crons WHERE ${this.cronFilter(q, params)}
       ORDER BY ${q.sort_by} ${q.sort_order === 'asc' ? 'ASC' : 'DESC'} NULLS LAST, cron_id LIMIT $${params.push(q.limit)} OFFSET $${params.push(q.offset)}`,
      params,
    );
    return r.rows.map(toCron);
  }

  /**
   * Takes up to `limit` enabled crons due now and not past their end, skipping those another process holds,
   * and moves each one's next_run_date to `nextRunOf(cron)` in the same transaction. Answers the crons as they
   * were: the caller fires them once this has committed (a process dying in between loses that firing, never
   * doubles it).
   */
  async claimDueCrons(limit: number, nextRunOf: (c: CronRow) => Date): Promise<CronRow[]> {
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN');
      const due = await c.query<CronRow>(
        `SELECT ${COLUMNS} FROM ${S}.crons
         WHERE enabled AND next_run_date <= now() AND (end_time IS NULL OR end_time > now())
         ORDER BY next_run_date LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [limit],
      );
      if (due.rows.length > 0) {
        await c.query(
          `UPDATE ${S}.crons c SET next_run_date = v.next_run_date FROM unnest($1::uuid[], $2::timestamptz[]) AS v(cron_id, next_run_date) WHERE c.cron_id = v.cron_id`,
          [due.rows.map((row) => row.cron_id), due.rows.map(nextRunOf)],
        );
      }
      await c.query('COMMIT');
      return due.rows;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  }
}
