import { Injectable } from '@nestjs/common';
import { ClickHouse } from '@th/clickhouse';
import { feedbackConfigSchema, type FeedbackConfig, type TenantScope } from '@th/contracts';

export interface StoredFeedbackToken {
  tenant_id: string;
  run_id: string;
  feedback_key: string;
  feedback_config: FeedbackConfig | null;
  expires_at: Date;
}

interface Row {
  tenant_id: string;
  run_id: string;
  feedback_key: string;
  feedback_config: string | null;
  expires_at: string;
}

const chTime = (d: Date): string => d.toISOString().replace('T', ' ').replace('Z', '');
const fromChTime = (s: string): Date => new Date(s.endsWith('Z') ? s : `${s.replace(' ', 'T')}Z`);

/** The only code that speaks SQL to feedback_tokens: tokens are found by their hash, never by their value. */
@Injectable()
export class FeedbackTokenRepository {
  constructor(private readonly ch: ClickHouse) {}

  async insert(tokens: (StoredFeedbackToken & { token_hash: string })[]): Promise<void> {
    const now = chTime(new Date());
    const rows = tokens.map((t) =>
      JSON.stringify({
        token_hash: t.token_hash,
        tenant_id: t.tenant_id,
        run_id: t.run_id,
        feedback_key: t.feedback_key,
        feedback_config: t.feedback_config ? JSON.stringify(t.feedback_config) : null,
        created_at: now,
        expires_at: chTime(t.expires_at),
      }),
    );
    await this.ch.insertJsonEachRow('feedback_tokens', Buffer.from(rows.join('\n')));
  }

  /** A run's unexpired tokens, newest first: their hashes and expiry only. */
  async listLiveForRun(scope: TenantScope, runId: string, page: { limit: number; offset: number }): Promise<{ token_hash: string; expires_at: Date }[]> {
    const rows = await this.ch.query<{ token_hash: string; expires_at: string }>(
      `SELECT token_hash, expires_at FROM feedback_tokens FINAL
       WHERE tenant_id = {tenant:UUID} AND run_id = {run:UUID} AND expires_at > now64(6)
       ORDER BY created_at DESC, token_hash LIMIT {limit:UInt32} OFFSET {offset:UInt32}`,
      { tenant: scope.tenant_id, run: runId, limit: page.limit, offset: page.offset },
    );
    return rows.map((r) => ({ token_hash: r.token_hash, expires_at: fromChTime(r.expires_at) }));
  }

  async findByHash(tokenHash: string): Promise<StoredFeedbackToken | null> {
    const rows = await this.ch.query<Row>(
      `SELECT toString(tenant_id) AS tenant_id, toString(run_id) AS run_id, feedback_key, feedback_config, expires_at
       FROM feedback_tokens FINAL WHERE token_hash = {hash:String} LIMIT 1`,
      { hash: tokenHash },
    );
    const r = rows[0];
    if (!r) return null;
    return {
      tenant_id: r.tenant_id,
      run_id: r.run_id,
      feedback_key: r.feedback_key,
      feedback_config: r.feedback_config === null ? null : feedbackConfigSchema.parse(JSON.parse(r.feedback_config)),
      expires_at: fromChTime(r.expires_at),
    };
  }
}
