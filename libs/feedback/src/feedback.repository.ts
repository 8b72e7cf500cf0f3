import { Injectable } from '@nestjs/common';
import { byIdCondition, ClickHouse, RUNS_BY_ID, type QueryParams } from '@th/clickhouse';
import type { FeedbackEvent, FeedbackListQuery, FeedbackStatsGroup, TenantScope } from '@th/contracts';
import { FEEDBACK_COLUMNS, eventFromRow, feedbackRowsBytes, type StoredFeedbackRow } from './feedback-row';

/** The only code that speaks SQL to the feedback table; every query is bound to a tenant and reads merged rows (FINAL). */
@Injectable()
export class FeedbackRepository {
  constructor(private readonly ch: ClickHouse) {}

  /** The live feedback with this id, or null (never written, or deleted). */
  async findById(scope: TenantScope, id: string): Promise<FeedbackEvent | null> {
    const rows = await this.ch.query<StoredFeedbackRow>(
      `SELECT ${FEEDBACK_COLUMNS} FROM feedback FINAL WHERE tenant_id = {tenant:UUID} AND id = {id:UUID} ORDER BY version DESC LIMIT 1`,
      { tenant: scope.tenant_id, id },
    );
    return rows.length > 0 ? eventFromRow(rows[0]) : null;
  }

  /** Where a stored run lives (its trace and project), or null when the run has not arrived (yet). */
  async findRunLocation(scope: TenantScope, runId: string): Promise<{ trace_id: string; session_id: string } | null> {
    const byId = byIdCondition('id', runId);
    const rows = await this.ch.query<{ trace_id: string; session_id: string }>(
      `SELECT trace_id, session_id FROM ${RUNS_BY_ID} FINAL
       WHERE tenant_id = {tenant:UUID} AND ${byId.sql} AND is_deleted = 0 ORDER BY version DESC LIMIT 1`,
      { tenant: scope.tenant_id, ...byId.params },
    );
    return rows[0] ?? null;
  }

  /**
   * Newest first. A trace or project filter also matches feedback stored without that id whose run
   * belongs to the trace or project (feedback may arrive before its run).
   */
  async list(scope: TenantScope, q: FeedbackListQuery): Promise<FeedbackEvent[]> {
    const where = ['tenant_id = {tenant:UUID}'];
    const params: QueryParams = { tenant: scope.tenant_id, offset: q.offset, limit: q.limit };
    if (q.run?.length) {
      where.push('run_id IN {runs:Array(UUID)}');
      params.runs = q.run;
    }
    if (q.trace?.length) {
      where.push(
        `(trace_id IN {traces:Array(UUID)} OR run_id IN (SELECT id FROM ${RUNS_BY_ID} FINAL
          WHERE tenant_id = {tenant:UUID} AND trace_id IN {traces:Array(UUID)} AND is_deleted = 0))`,
      );
      params.traces = q.trace;
    }
    if (q.session?.length) {
      where.push(
        `(session_id IN {sessions:Array(UUID)} OR run_id IN (SELECT id FROM ${RUNS_BY_ID} FINAL
          WHERE tenant_id = {tenant:UUID} AND session_id IN {sessions:Array(UUID)} AND is_deleted = 0))`,
      );
      params.sessions = q.session;
    }
    if (q.key?.length) {
      where.push('key IN {keys:Array(String)}');
      params.keys = q.key;
    }
    if (q.source?.length) {
      where.push('source_type IN {sources:Array(String)}');
      params.sources = q.source;
    }
    if (q.has_comment !== undefined) where.push(q.has_comment ? "ifNull(comment, '') != ''" : "ifNull(comment, '') = ''");
    if (q.has_score !== undefined) where.push(q.has_score ? 'score IS NOT NULL' : 'score IS NULL');
    const rows = await this.ch.query<StoredFeedbackRow>(
      `SELECT ${FEEDBACK_COLUMNS} FROM feedback FINAL WHERE ${where.join(' AND ')}
       ORDER BY created_at DESC, id DESC LIMIT {limit:UInt32} OFFSET {offset:UInt32}`,
      params,
    );
    return rows.map(eventFromRow);
  }

  /** Per comparative experiment: its pairwise feedback grouped by key and value (rolled up by the caller). */
  async statsGroupsByComparativeExperiment(scope: TenantScope, ids: string[]): Promise<(FeedbackStatsGroup & { experiment: string })[]> {
    if (ids.length === 0) return [];
    return this.ch.query<FeedbackStatsGroup & { experiment: string }>(
      `SELECT toString(comparative_experiment_id) AS experiment, key, value, count() AS n, countIf(score IS NOT NULL) AS scored,
              sumOrNull(score) AS sum, sumOrNull(score * score) AS sum_sq
       FROM feedback FINAL
       WHERE tenant_id = {tenant:UUID} AND comparative_experiment_id IN {ids:Array(UUID)} AND is_deleted = 0
       GROUP BY comparative_experiment_id, key, value`,
      { tenant: scope.tenant_id, ids: [...new Set(ids)] },
    );
  }

  /** Inserts whole feedback versions; the engine keeps the newest per id. */
  async insert(events: FeedbackEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.ch.insertJsonEachRow('feedback', await feedbackRowsBytes(events));
  }
}
