import { Injectable } from '@nestjs/common';
import { ClickHouse, chTime, isoFromCh } from '@th/clickhouse';
import { feedbackConfigSchema, type FeedbackConfigRecord } from '@th/contracts';

interface Row {
  tenant_id: string;
  feedback_key: string;
  feedback_config: string;
  is_lower_score_better: number | null;
  modified_at: string;
}

const COLUMNS = 'tenant_id, feedback_key, feedback_config, is_lower_score_better, modified_at';

function fromRow(r: Row): FeedbackConfigRecord {
  return {
    feedback_key: r.feedback_key,
    feedback_config: feedbackConfigSchema.parse(JSON.parse(r.feedback_config)),
    tenant_id: r.tenant_id,
    modified_at: new Date(isoFromCh(r.modified_at)).toISOString(),
    is_lower_score_better: r.is_lower_score_better === null ? null : Number(r.is_lower_score_better) === 1,
  };
}

/** A page of the list (GET /feedback-configs): keys containing `name_contains` (any case), `limit` from `offset` in key order. */
export interface FeedbackConfigPage {
  name_contains?: string;
  limit?: number;
  offset?: number;
}

/** The only code that speaks SQL to feedback_configs; every query is bound to a workspace and reads merged rows (FINAL). */
@Injectable()
export class FeedbackConfigRepository {
  private lastVersion = 0;
  constructor(private readonly ch: ClickHouse) {}

  async list(tenant: string, keys?: string[], page: FeedbackConfigPage = {}): Promise<FeedbackConfigRecord[]> {
    const byKey = keys && keys.length > 0 ? ' AND feedback_key IN {keys:Array(String)}' : '';
    const byName = page.name_contains ? ' AND positionCaseInsensitive(feedback_key, {name_contains:String}) > 0' : '';
    const paged = page.limit !== undefined ? ' LIMIT {limit:UInt32} OFFSET {offset:UInt32}' : '';
    const rows = await this.ch.query<Row>(
      `SELECT ${COLUMNS} FROM feedback_configs FINAL WHERE tenant_id = {tenant:UUID} AND is_deleted = 0${byKey}${byName} ORDER BY feedback_key${paged}`,
      {
        tenant,
        ...(byKey ? { keys } : {}),
        ...(byName ? { name_contains: page.name_contains } : {}),
        ...(paged ? { limit: page.limit, offset: page.offset ?? 0 } : {}),
      },
    );
    return rows.map(fromRow);
  }

  async get(tenant: string, key: string): Promise<FeedbackConfigRecord | null> {
    return (await this.list(tenant, [key]))[0] ?? null;
  }

  /** Writes the config's new version (or its tombstone); resolves once ClickHouse has the row. */
  async put(rec: FeedbackConfigRecord, deleted = false): Promise<void> {
    this.lastVersion = Math.max(this.lastVersion + 1, Date.now() * 1000);
    const row = {
      tenant_id: rec.tenant_id,
      feedback_key: rec.feedback_key,
      feedback_config: JSON.stringify(rec.feedback_config),
      is_lower_score_better: rec.is_lower_score_better === null ? null : rec.is_lower_score_better ? 1 : 0,
      modified_at: chTime(rec.modified_at),
      version: this.lastVersion,
      is_deleted: deleted ? 1 : 0,
    };
    await this.ch.insertJsonEachRow('feedback_configs', Buffer.from(JSON.stringify(row)));
  }
}
