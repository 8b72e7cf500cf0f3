import type { EntityManager } from 'typeorm';
import type { PromptWebhookTrigger } from '@th/contracts';

export interface WebhookRow {
  id: string;
  tenant_id: string;
  url: string;
  include_prompts: string[] | null;
  exclude_prompts: string[] | null;
  headers_sealed: string | null;
  secret_sealed: string;
  triggers: PromptWebhookTrigger[];
  created_at: Date;
  updated_at: Date;
}

export type WebhookWrite = Pick<WebhookRow, 'url' | 'include_prompts' | 'exclude_prompts' | 'headers_sealed' | 'triggers'>;

const COLUMNS = 'id, tenant_id, url, include_prompts, exclude_prompts, headers_sealed, secret_sealed, triggers, created_at, updated_at';

/** SQL of `prompt_hub.webhooks`; every statement is bounded by the workspace. */
export class PromptWebhooksRepository {
  constructor(readonly db: Pick<EntityManager, 'query'>) {}

  /** Null when the id is taken. */
  async insert(tenantId: string, id: string, w: WebhookWrite, secretSealed: string): Promise<WebhookRow | null> {
    const rows: WebhookRow[] = await this.db.query(
      `INSERT INTO prompt_hub.webhooks (id, tenant_id, url, include_prompts, exclude_prompts, headers_sealed, secret_sealed, triggers, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now(), now()) ON CONFLICT (id) DO NOTHING RETURNING ${COLUMNS}`,
      [id, tenantId, w.url, w.include_prompts, w.exclude_prompts, w.headers_sealed, secretSealed, w.triggers],
    );
    return rows[0] ?? null;
  }

  async get(tenantId: string, id: string): Promise<WebhookRow | null> {
    const rows: WebhookRow[] = await this.db.query(`SELECT ${COLUMNS} FROM prompt_hub.webhooks WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
    return rows[0] ?? null;
  }

  /** A workspace has few webhooks; the bound keeps a listing and a fan-out finite all the same. */
  list(tenantId: string, limit = 500): Promise<WebhookRow[]> {
    return this.db.query(`SELECT ${COLUMNS} FROM prompt_hub.webhooks WHERE tenant_id = $1 ORDER BY created_at, id LIMIT $2`, [tenantId, limit]);
  }

  async update(tenantId: string, id: string, w: WebhookWrite): Promise<WebhookRow | null> {
    const rows: [WebhookRow[], number] = await this.db.query(
      `UPDATE prompt_hub.webhooks SET url = $3, include_prompts = $4, exclude_prompts = $5, headers_sealed = $6, triggers = $7, updated_at = now()
       WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [tenantId, id, w.url, w.include_prompts, w.exclude_prompts, w.headers_sealed, w.triggers],
    );
    return rows[0][0] ?? null;
  }

  async delete(tenantId: string, id: string): Promise<boolean> {
    const [, n]: [unknown, number] = await this.db.query(`DELETE FROM prompt_hub.webhooks WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
    return n > 0;
  }
}
