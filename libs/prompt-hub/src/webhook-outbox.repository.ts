import type { EntityManager } from 'typeorm';
import type { PromptWebhookDeliveryListQuery } from '@th/contracts';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'cancelled';

export interface StagedDelivery {
  id: string;
  tenant_id: string;
  webhook_id: string;
  event: string;
  body: string;
}

/** A delivery as its history shows it. */
export interface DeliveryRow {
  id: string;
  webhook_id: string;
  event: string;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  next_attempt_at: Date;
  finished_at: Date | null;
}

export interface ClaimedDelivery extends StagedDelivery {
  /** Tries so far, this one included. */
  attempts: number;
}

/** SQL of `prompt_hub.webhook_deliveries`. */
export class WebhookOutboxRepository {
  constructor(private readonly db: Pick<EntityManager, 'query'>) {}

  /** Pending deliveries of a workspace (the staging bound). */
  async pending(tenantId: string): Promise<number> {
    const rows: { n: string }[] = await this.db.query(`SELECT count(*) AS n FROM prompt_hub.webhook_deliveries WHERE tenant_id = $1 AND status = 'pending'`, [tenantId]);
    return Number(rows[0]?.n ?? 0);
  }

  /** A webhook's deliveries, newest first. */
  async listForWebhook(tenantId: string, webhookId: string, q: PromptWebhookDeliveryListQuery): Promise<{ rows: DeliveryRow[]; total: number }> {
    const params: unknown[] = [tenantId, webhookId];
    let cond = 'tenant_id = $1 AND webhook_id = $2';
    if (q.status) cond += ` AND status = $${params.push(q.status)}`;
    const total: { n: number }[] = await this.db.query(`SELECT count(*)::int AS n FROM prompt_hub.webhook_deliveries WHERE ${cond}`, params);
    const rows: DeliveryRow[] = await this.db.query(
      `SELECT id, webhook_id, event, status, attempts, last_status_code, last_error, created_at, next_attempt_at, finished_at
       FROM prompt_hub.webhook_deliveries WHERE ${cond} ORDER BY created_at DESC, id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, q.limit, q.offset],
    );
    return { rows, total: total[0]?.n ?? 0 };
  }

  async stage(rows: StagedDelivery[]): Promise<void> {
    if (rows.length === 0) return;
    const values: string[] = [];
    const params: unknown[] = [];
    for (const r of rows) {
      const b = params.length;
      values.push(`($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, now(), now())`);
      params.push(r.id, r.tenant_id, r.webhook_id, r.event, r.body);
    }
    await this.db.query(
      `INSERT INTO prompt_hub.webhook_deliveries (id, tenant_id, webhook_id, event, body, next_attempt_at, created_at) VALUES ${values.join(', ')}`,
      params,
    );
  }

  /**
   * Takes up to `limit` due deliveries for `leaseMs`: another dispatcher skips them until the lease runs out, so a
   * process that dies mid-delivery leaves them to the next one (at-least-once).
   */
  async claim(limit: number, leaseMs: number, maxAttempts: number): Promise<ClaimedDelivery[]> {
    // an UPDATE ... RETURNING answers [rows, count] through TypeORM
    const [rows]: [ClaimedDelivery[], number] = await this.db.query(
      `UPDATE prompt_hub.webhook_deliveries d SET attempts = d.attempts + 1, lease_until = now() + make_interval(secs => $2::double precision / 1000)
       WHERE d.id IN (
         SELECT id FROM prompt_hub.webhook_deliveries
         WHERE status = 'pending' AND next_attempt_at <= now() AND (lease_until IS NULL OR lease_until < now()) AND attempts < $3
         ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING d.id, d.tenant_id, d.webhook_id, d.event, d.body, d.attempts`,
      [limit, leaseMs, maxAttempts],
    );
    return rows;
  }

  async retryLater(id: string, delayMs: number, statusCode: number | null, error: string): Promise<void> {
    await this.db.query(
      `UPDATE prompt_hub.webhook_deliveries SET lease_until = NULL, next_attempt_at = now() + make_interval(secs => $2::double precision / 1000),
         last_status_code = $3, last_error = $4 WHERE id = $1`,
      [id, delayMs, statusCode, error.slice(0, 500)],
    );
  }

  async finish(id: string, status: Exclude<DeliveryStatus, 'pending'>, statusCode: number | null, error: string | null): Promise<void> {
    await this.db.query(
      `UPDATE prompt_hub.webhook_deliveries SET status = $2, lease_until = NULL, finished_at = now(), last_status_code = $3, last_error = $4 WHERE id = $1`,
      [id, status, statusCode, error?.slice(0, 500) ?? null],
    );
  }

  /** Ends deliveries whose last try died with its process, and forgets finished ones older than `keepMs`. */
  async sweep(maxAttempts: number, keepMs: number): Promise<void> {
    await this.db.query(
      `UPDATE prompt_hub.webhook_deliveries SET status = 'failed', finished_at = now(), last_error = coalesce(last_error, 'the delivering process stopped')
       WHERE status = 'pending' AND attempts >= $1 AND lease_until < now()`,
      [maxAttempts],
    );
    await this.db.query(`DELETE FROM prompt_hub.webhook_deliveries WHERE finished_at < now() - make_interval(secs => $1::double precision / 1000)`, [keepMs]);
  }
}
