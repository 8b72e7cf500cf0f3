import { Injectable } from '@nestjs/common';
import { ClickHouse } from '@th/clickhouse';
import type { RunUsage, TenantScope } from '@th/contracts';

/** A project's time range cut into equal buckets: the first starts at `startUs`, each is `strideUs` wide. */
export interface BucketRange {
  sessionId: string;
  startUs: number;
  endUs: number;
  strideUs: number;
}

export interface RunBucketRow extends RunUsage {
  b: number;
  run_count: number;
  error_count: number;
  latency: (number | null)[];
}

export interface FeedbackBucketRow {
  b: number;
  key: string;
  avg_score: number | null;
  n: number;
}

const RANGE_WHERE = `tenant_id = {tenant:UUID} AND session_id = {session:UUID}
  AND start_time >= fromUnixTimestamp64Micro({t0:Int64}, 'UTC') AND start_time < fromUnixTimestamp64Micro({t1:Int64}, 'UTC')`;
const BUCKET = 'intDiv(toUnixTimestamp64Micro(start_time) - {t0:Int64}, {stride:Int64})';

/** ClickHouse reads behind a project's monitoring charts, grouped by time bucket; every read bound to tenant, project and range. */
@Injectable()
export class MonitoringRepository {
  constructor(private readonly ch: ClickHouse) {}

  private params(scope: TenantScope, r: BucketRange) {
    return { tenant: scope.tenant_id, session: r.sessionId, t0: r.startUs, t1: r.endUs, stride: r.strideUs };
  }

  /** Root runs (traces) give the count, errors and latency; every run gives tokens and cost (a parent's are not rolled up). */
  async runBuckets(scope: TenantScope, r: BucketRange): Promise<RunBucketRow[]> {
    return this.ch.query<RunBucketRow>(
      `SELECT ${BUCKET} AS b,
         countIf(is_root) AS run_count,
         countIf(is_root AND error IS NOT NULL) AS error_count,
         quantilesIf(0.5, 0.99)(dateDiff('microsecond', start_time, end_time) / 1e6, is_root AND end_time IS NOT NULL) AS latency,
         sum(total_tokens) AS total_tokens,
         sum(prompt_tokens) AS prompt_tokens,
         sum(completion_tokens) AS completion_tokens,
         sumOrNull(total_cost) AS total_cost,
         sumOrNull(prompt_cost) AS prompt_cost,
         sumOrNull(completion_cost) AS completion_cost
       FROM runs FINAL WHERE ${RANGE_WHERE}
       GROUP BY b ORDER BY b`,
      this.params(scope, r),
      // Versions of a run share its partition (start_time is in the key): FINAL need not merge across them.
      { do_not_merge_across_partitions_select_final: 1 },
    );
  }

  /** The average score per feedback key, bucketed by the start of the run the feedback is on. */
  async feedbackBuckets(scope: TenantScope, r: BucketRange): Promise<FeedbackBucketRow[]> {
    return this.ch.query<FeedbackBucketRow>(
      `SELECT ${BUCKET} AS b, f.key AS key, avg(f.score) AS avg_score, count() AS n
       FROM (
         SELECT run_id, key, score FROM feedback FINAL
         WHERE tenant_id = {tenant:UUID} AND score IS NOT NULL
           AND run_id IN (SELECT id FROM runs FINAL WHERE ${RANGE_WHERE})
       ) AS f
       INNER JOIN (SELECT id, start_time FROM runs FINAL WHERE ${RANGE_WHERE}) AS r ON f.run_id = r.id
       GROUP BY b, key ORDER BY key, b`,
      this.params(scope, r),
      { do_not_merge_across_partitions_select_final: 1 },
    );
  }
}
