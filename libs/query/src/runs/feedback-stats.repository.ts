import { Injectable } from '@nestjs/common';
import { ClickHouse, type QueryParams } from '@th/clickhouse';
import { rollupFeedbackStats, type FeedbackStats, type FeedbackStatsGroup, type TenantScope } from '@th/contracts';

const GROUP_COLUMNS =
  "key, value, count() AS n, countIf(score IS NOT NULL) AS scored, sumOrNull(score) AS sum, sumOrNull(score * score) AS sum_sq";

/**
 * feedback_stats computed by query from the feedback table (FINAL: one row per feedback id, the
 * newest version, deleted ones dropped), so re-delivered or updated feedback is never counted twice
 * and feedback that arrived before its run counts as soon as the run is there.
 */
@Injectable()
export class FeedbackStatsRepository {
  constructor(private readonly ch: ClickHouse) {}

  /** Per run, for a page of runs (a primary-key read: the table is sorted by tenant and run). */
  async forRuns(scope: TenantScope, runIds: string[]): Promise<Map<string, FeedbackStats>> {
    const out = new Map<string, FeedbackStats>();
    if (runIds.length === 0) return out;
    const rows = await this.ch.query<FeedbackStatsGroup & { run_id: string }>(
      `SELECT run_id, ${GROUP_COLUMNS} FROM feedback FINAL
       WHERE tenant_id = {tenant:UUID} AND run_id IN {ids:Array(UUID)} GROUP BY run_id, key, value`,
      { tenant: scope.tenant_id, ids: [...new Set(runIds)] },
    );
    const byRun = new Map<string, FeedbackStatsGroup[]>();
    for (const r of rows) byRun.set(r.run_id, [...(byRun.get(r.run_id) ?? []), r]);
    for (const [id, groups] of byRun) {
      const stats = rollupFeedbackStats(groups);
      if (stats) out.set(id, stats);
    }
    return out;
  }

  /** Over the feedback of every run matched by a runs WHERE clause (a trace, a project, a filter). */
  async forRunsWhere(where: string, params: QueryParams): Promise<FeedbackStats | null> {
    // A workspace without feedback (the common case) skips the join: one primary-key probe instead.
    const any = await this.ch.query<{ one: number }>('SELECT 1 AS one FROM feedback WHERE tenant_id = {tenant:UUID} LIMIT 1', params);
    if (any.length === 0) return null;
    const rows = await this.ch.query<FeedbackStatsGroup>(
      `SELECT ${GROUP_COLUMNS} FROM feedback FINAL
       WHERE tenant_id = {tenant:UUID} AND run_id IN (SELECT id FROM runs FINAL WHERE ${where}) GROUP BY key, value`,
      params,
      // As in the run stats: versions of a run share its partition, so FINAL need not merge across them.
      { do_not_merge_across_partitions_select_final: 1 },
    );
    return rollupFeedbackStats(rows);
  }

  /** Project-level feedback (no run), e.g. summary evaluator scores of an experiment. */
  async forSessionOnly(scope: TenantScope, sessionId: string): Promise<FeedbackStats | null> {
    const rows = await this.ch.query<FeedbackStatsGroup>(
      `SELECT ${GROUP_COLUMNS} FROM feedback FINAL
       WHERE tenant_id = {tenant:UUID} AND run_id = toUUID('00000000-0000-0000-0000-000000000000') AND session_id = {session:UUID}
       GROUP BY key, value`,
      { tenant: scope.tenant_id, session: sessionId },
    );
    return rollupFeedbackStats(rows);
  }
}
