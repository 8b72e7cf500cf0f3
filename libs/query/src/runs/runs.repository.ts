import { Injectable } from '@nestjs/common';
import { ClickHouse, type QueryParams } from '@th/clickhouse';
import type { RunRecord } from '@th/contracts';

export interface TenantScope {
  tenant_id: string;
}

/** A WHERE fragment with its typed parameters; fragments are ANDed. */
export interface Condition {
  sql: string;
  params: QueryParams;
}

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** Stored column (or expression) behind each run record field. */
const FIELD_SQL: Record<keyof RunRecord, string> = {
  id: 'id',
  tenant_id: 'tenant_id',
  session_id: 'session_id',
  trace_id: 'trace_id',
  parent_run_id: 'parent_run_id',
  parent_run_ids: 'parent_run_ids',
  reference_example_id: 'reference_example_id',
  name: 'name',
  run_type: 'run_type',
  start_time: 'start_time',
  end_time: 'end_time',
  status: 'status',
  is_root: 'is_root',
  dotted_order: 'dotted_order',
  trace_tier: 'trace_tier',
  inputs: 'inputs',
  outputs: 'outputs',
  error: 'error',
  extra: 'extra',
  events: 'events',
  tags: 'tags',
  serialized: 'serialized',
  feedback_stats: 'feedback_stats',
  total_tokens: 'total_tokens',
  prompt_tokens: 'prompt_tokens',
  completion_tokens: 'completion_tokens',
  total_cost: 'total_cost',
  prompt_cost: 'prompt_cost',
  completion_cost: 'completion_cost',
  first_token_time: 'first_token_time',
  latency: "if(end_time IS NULL, NULL, dateDiff('microsecond', start_time, end_time) / 1e6) AS latency",
  app_path: 'session_id',
  attachments: 'attachments',
};

export type StoredRun = Record<string, unknown>;

/** ClickHouse reads of runs. Every query is bound to a tenant and reads merged rows only (FINAL). */
@Injectable()
export class RunsRepository {
  constructor(private readonly ch: ClickHouse) {}

  static columnsFor(fields: readonly (keyof RunRecord)[]): string {
    const cols = new Set<string>(['id', 'session_id', 'start_time', 'trace_id']);
    for (const f of fields) cols.add(FIELD_SQL[f]);
    return [...cols].join(', ');
  }

  async getById(scope: TenantScope, id: string, fields: readonly (keyof RunRecord)[]): Promise<StoredRun | null> {
    const rows = await this.ch.query<StoredRun>(
      `SELECT ${RunsRepository.columnsFor(fields)} FROM runs FINAL
       WHERE tenant_id = {tenant:UUID} AND id = {id:UUID} LIMIT 1`,
      { tenant: scope.tenant_id, id },
    );
    return rows[0] ?? null;
  }

  async list(
    scope: TenantScope,
    conditions: Condition[],
    fields: readonly (keyof RunRecord)[],
    order: 'asc' | 'desc',
    limit: number,
  ): Promise<StoredRun[]> {
    const { where, params } = this.where(scope, conditions);
    const dir = order === 'asc' ? 'ASC' : 'DESC';
    return this.ch.query<StoredRun>(
      `SELECT ${RunsRepository.columnsFor(fields)} FROM runs FINAL WHERE ${where}
       ORDER BY start_time ${dir}, id ${dir} LIMIT {limit:UInt32}`,
      { ...params, limit },
    );
  }

  async stats(scope: TenantScope, conditions: Condition[]): Promise<Record<string, unknown>> {
    const { where, params } = this.where(scope, conditions);
    const rows = await this.ch.query<Record<string, unknown>>(
      `SELECT
         count() AS run_count,
         countIf(error IS NOT NULL) AS error_count,
         quantilesIf(0.5, 0.99)(dateDiff('microsecond', start_time, end_time) / 1e6, end_time IS NOT NULL) AS latency,
         quantilesIf(0.5, 0.99)(dateDiff('microsecond', start_time, first_token_time) / 1e6, first_token_time IS NOT NULL) AS first_token,
         sum(total_tokens) AS s_total_tokens,
         sum(prompt_tokens) AS s_prompt_tokens,
         sum(completion_tokens) AS s_completion_tokens,
         quantileIf(0.5)(total_tokens, total_tokens > 0) AS median_tokens,
         sumOrNull(total_cost) AS s_total_cost,
         sumOrNull(prompt_cost) AS s_prompt_cost,
         sumOrNull(completion_cost) AS s_completion_cost,
         countIf(first_token_time IS NOT NULL) AS streaming_count,
         if(count() = 0, NULL, max(start_time)) AS last_run_start_time
       FROM runs FINAL WHERE ${where}`,
      params,
    );
    return rows[0] ?? {};
  }

  async attachment(scope: TenantScope, runId: string, name: string): Promise<{ mime_type: string; data: string } | null> {
    const rows = await this.ch.query<{ mime_type: string; data: string }>(
      `SELECT mime_type, data FROM run_attachments FINAL WHERE tenant_id = {tenant:UUID} AND run_id = {id:UUID} AND name = {name:String}`,
      { tenant: scope.tenant_id, id: runId, name },
    );
    return rows[0] ?? null;
  }

  private where(scope: TenantScope, conditions: Condition[]): { where: string; params: QueryParams } {
    const parts = ['tenant_id = {tenant:UUID}', `session_id != '${NIL_UUID}'`];
    let params: QueryParams = { tenant: scope.tenant_id };
    for (const c of conditions) {
      parts.push(`(${c.sql})`);
      params = { ...params, ...c.params };
    }
    return { where: parts.join(' AND '), params };
  }
}
