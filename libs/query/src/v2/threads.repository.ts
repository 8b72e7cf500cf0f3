import { Injectable } from '@nestjs/common';
import { ClickHouse, type QueryParams } from '@th/clickhouse';
import { LATENCY_SQL, THREAD_ID_SQL, type RunUsage } from '@th/contracts';

/** A tenant-bound WHERE clause over runs (RunsService.matchWhere) with its parameters. */
export interface RunsWhere {
  where: string;
  params: QueryParams;
}

/** One thread of a list: its key and the aggregates of its traces (root runs). */
export interface ThreadRow {
  thread_id: string;
  count: number;
  min_start_time: string;
  max_start_time: string;
  first_trace_id: string;
  last_trace_id: string;
  first_inputs: string;
  last_outputs: string;
  last_error: string | null;
  latency: (number | null)[];
  total_tokens: number;
  total_cost: number | null;
  num_errored_turns: number;
}

/** Versions of a run share its partition (start_time is in the key): FINAL need not merge across them. */
const FINAL_SETTINGS = { do_not_merge_across_partitions_select_final: 1 };

/**
 * ClickHouse reads of threads (the traces of one conversation key) and of trace aggregates. The thread key is
 * derived at query time (THREAD_ID_SQL), so grouping reads the metadata map of the matched root runs.
 */
@Injectable()
export class ThreadsRepository {
  constructor(private readonly ch: ClickHouse) {}

  /** A page of threads, newest activity first, after the (max_start_time, thread_id) keyset `after`. */
  listThreads(w: RunsWhere, limit: number, after: { t: string; id: string } | null): Promise<ThreadRow[]> {
    return this.ch.query<ThreadRow>(
      `SELECT thread_id, count() AS count, min(start_time) AS min_start_time, max(start_time) AS max_start_time,
         argMin(trace_id, start_time) AS first_trace_id, argMax(trace_id, start_time) AS last_trace_id,
         argMin(inputs, start_time) AS first_inputs, argMax(outputs, start_time) AS last_outputs, argMax(error, start_time) AS last_error,
         quantilesIf(0.5, 0.99)(latency, latency IS NOT NULL) AS latency,
         sum(total_tokens) AS total_tokens, sumOrNull(total_cost) AS total_cost, countIf(error IS NOT NULL) AS num_errored_turns
       FROM (SELECT ${THREAD_ID_SQL} AS thread_id, trace_id, start_time, inputs, outputs, error, total_tokens, total_cost,
               if(end_time IS NULL, NULL, ${LATENCY_SQL}) AS latency
             FROM runs FINAL WHERE ${w.where})
       WHERE thread_id IS NOT NULL
       GROUP BY thread_id
       ${after ? `HAVING (max(start_time), thread_id) < (parseDateTime64BestEffort({after_t:String}, 6, 'UTC'), {after_id:String})` : ''}
       ORDER BY max(start_time) DESC, thread_id DESC
       LIMIT {limit:UInt32}`,
      { ...w.params, limit, ...(after ? { after_t: after.t, after_id: after.id } : {}) },
      FINAL_SETTINGS,
    );
  }

  /** Aggregates over the matched root runs of one thread (`w` names the project and the filters). */
  async threadStats(w: RunsWhere, threadId: string): Promise<Record<string, unknown>> {
    const rows = await this.ch.query<Record<string, unknown>>(
      `SELECT count() AS turns, min(start_time) AS first_start_time, max(start_time) AS last_start_time, max(end_time) AS last_end_time,
         quantilesIf(0.5, 0.99)(${LATENCY_SQL}, end_time IS NOT NULL) AS latency,
         sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens, sum(total_tokens) AS total_tokens,
         sumOrNull(prompt_cost) AS prompt_cost, sumOrNull(completion_cost) AS completion_cost, sumOrNull(total_cost) AS total_cost
       FROM runs FINAL WHERE ${w.where} AND ${THREAD_ID_SQL} = {thread:String}`,
      { ...w.params, thread: threadId },
      FINAL_SETTINGS,
    );
    return rows[0] ?? {};
  }

  /** The ids of the matched root runs of one thread (its turns), or of every thread when `threadId` is absent; at most `limit`. */
  async threadRootIds(w: RunsWhere, threadId: string | undefined, limit: number): Promise<string[]> {
    const thread = threadId === undefined ? `${THREAD_ID_SQL} IS NOT NULL` : `${THREAD_ID_SQL} = {thread:String}`;
    const rows = await this.ch.query<{ id: string }>(
      `SELECT id FROM runs FINAL WHERE ${w.where} AND ${thread} LIMIT {limit:UInt32}`,
      { ...w.params, ...(threadId === undefined ? {} : { thread: threadId }), limit },
      FINAL_SETTINGS,
    );
    return rows.map((r) => r.id);
  }

  /** Aggregates over the threads of the matched root runs (sums as s_*: an alias must not shadow a column another aggregate reads). */
  async threadsAggregate(w: RunsWhere): Promise<Record<string, unknown>> {
    const rows = await this.ch.query<Record<string, unknown>>(
      `SELECT uniqExact(thread_id) AS thread_count, count() AS trace_count, countIf(error IS NOT NULL) AS error_count,
         countIf(first_token_time IS NOT NULL) AS streaming_count,
         quantilesIf(0.5, 0.99)(latency, latency IS NOT NULL) AS latency,
         quantilesIf(0.5, 0.99)(first_token, first_token IS NOT NULL) AS first_token,
         quantileIf(0.5)(total_tokens, total_tokens > 0) AS median_tokens,
         sum(prompt_tokens) AS s_prompt_tokens, sum(completion_tokens) AS s_completion_tokens, sum(total_tokens) AS s_total_tokens,
         sumOrNull(prompt_cost) AS s_prompt_cost, sumOrNull(completion_cost) AS s_completion_cost, sumOrNull(total_cost) AS s_total_cost
       FROM (SELECT ${THREAD_ID_SQL} AS thread_id, error, first_token_time, prompt_tokens, completion_tokens, total_tokens, prompt_cost, completion_cost, total_cost,
               if(end_time IS NULL, NULL, ${LATENCY_SQL}) AS latency,
               if(first_token_time IS NULL, NULL, dateDiff('microsecond', start_time, first_token_time) / 1e6) AS first_token
             FROM runs FINAL WHERE ${w.where})
       WHERE thread_id IS NOT NULL`,
      w.params,
      FINAL_SETTINGS,
    );
    return rows[0] ?? {};
  }

  /** Per trace: the sums of its runs' tokens and cost, its first token time. */
  async traceAggregates(w: RunsWhere, traceIds: string[]): Promise<Map<string, { total_tokens: number; total_cost: number | null; first_token_time: string | null }>> {
    if (traceIds.length === 0) return new Map();
    const rows = await this.ch.query<{ trace_id: string; total_tokens: number; total_cost: number | null; first_token_time: string | null }>(
      `SELECT trace_id, sum(total_tokens) AS total_tokens, sumOrNull(total_cost) AS total_cost, min(first_token_time) AS first_token_time
       FROM runs FINAL WHERE ${w.where} AND trace_id IN {agg_traces:Array(UUID)} GROUP BY trace_id`,
      { ...w.params, agg_traces: traceIds },
      FINAL_SETTINGS,
    );
    return new Map(rows.map((r) => [r.trace_id, { total_tokens: Number(r.total_tokens), total_cost: r.total_cost, first_token_time: r.first_token_time }]));
  }

  /**
   * Usage summed over each run's subtree (the run and every run of its trace under its dotted_order), keyed by
   * dotted_order: each run counts once for each of its ancestors' prefixes, so one grouped scan answers them all.
   */
  async subtreeUsage(w: RunsWhere, traceIds: string[], dottedOrders: string[]): Promise<Map<string, SubtreeUsage>> {
    if (dottedOrders.length === 0) return new Map();
    const rows = await this.ch.query<SubtreeUsage & { prefix: string }>(
      `SELECT prefix, count() AS runs, sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens, sum(total_tokens) AS total_tokens,
              sumOrNull(prompt_cost) AS prompt_cost, sumOrNull(completion_cost) AS completion_cost, sumOrNull(total_cost) AS total_cost,
              min(first_token_time) AS first_token_time
       FROM runs FINAL
       ARRAY JOIN arrayMap(i -> arrayStringConcat(arraySlice(splitByChar('.', dotted_order), 1, i), '.'), range(1, length(splitByChar('.', dotted_order)) + 1)) AS prefix
       WHERE ${w.where} AND trace_id IN {sub_traces:Array(UUID)} AND prefix IN {sub_prefixes:Array(String)}
       GROUP BY prefix`,
      { ...w.params, sub_traces: [...new Set(traceIds)], sub_prefixes: dottedOrders },
      FINAL_SETTINGS,
    );
    return new Map(
      rows.map((r) => [
        r.prefix,
        {
          runs: Number(r.runs),
          prompt_tokens: Number(r.prompt_tokens),
          completion_tokens: Number(r.completion_tokens),
          total_tokens: Number(r.total_tokens),
          prompt_cost: r.prompt_cost,
          completion_cost: r.completion_cost,
          total_cost: r.total_cost,
          first_token_time: r.first_token_time,
        },
      ]),
    );
  }
}

/** A run's subtree totals; `runs` counts the run itself, so 1 means no descendant was observed. */
export interface SubtreeUsage extends RunUsage {
  runs: number;
  first_token_time: string | null;
}
