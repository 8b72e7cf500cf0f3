import { Injectable } from '@nestjs/common';
import {
  THREAD_ID_SQL,
  runQuerySchema,
  toV2Run,
  v2Preview,
  v2RecordFields,
  type Identity,
  type V2ThreadQuery,
  type V2ThreadsAggregateStats,
  type V2ThreadTracesQuery,
} from '@th/contracts';
import { badRequest, decodePageCursor, encodePageCursor } from '@th/platform';
import { FeedbackStatsRepository } from '../runs/feedback-stats.repository';
import { RunsService } from '../runs/runs.service';
import { ThreadsRepository, type ThreadRow } from './threads.repository';
import { V2_DEFAULT_WINDOW_MS, V2_UNPAGED_MAX_RUNS, type V2Page } from './v2-runs.service';

/** The run filter naming one thread (the key quoted as a JSON string, which the filter language reads). */
export const threadFilter = (threadId: string, also?: string): string => {
  const own = `eq(thread_id, ${JSON.stringify(threadId)})`;
  return also ? `and(${own}, ${also})` : own;
};

const DETAIL_SELECTS = ['PROMPT_TOKEN_DETAILS', 'COMPLETION_TOKEN_DETAILS', 'PROMPT_COST_DETAILS', 'COMPLETION_COST_DETAILS'] as const;
type DetailSelect = (typeof DETAIL_SELECTS)[number];
/** Turns read per run query when summing the breakdowns. */
const DETAIL_PAGE = 100;
const finite = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** A thread trace's select read from the run (LATENCY is the run's latency; the rest as the run selects name them). */
const THREAD_TRACE_RUN_SELECT: Record<string, string> = { LATENCY: 'LATENCY_SECONDS' };

/** Threads: the traces (root runs) of one conversation key in a project, listed, paged and aggregated. */
@Injectable()
export class V2ThreadsService {
  constructor(
    private readonly runs: RunsService,
    private readonly repo: ThreadsRepository,
    private readonly feedbackStats: FeedbackStatsRepository,
  ) {}

  async query(identity: Identity, q: V2ThreadQuery): Promise<V2Page<Record<string, unknown>>> {
    const after = q.cursor
      ? decodePageCursor<{ t: string; id: string }>(q.cursor, ['body', 'cursor'], (v): v is { t: string; id: string } => typeof v.t === 'string' && typeof v.id === 'string')
      : null;
    const where = this.rootsWhere(identity, q);
    const rows = await this.repo.listThreads(where, q.page_size + 1, after);
    const page = rows.slice(0, q.page_size);
    const last = page[page.length - 1];
    return {
      items: page.map((r) => this.presentThread(r)),
      next_cursor: rows.length > q.page_size && last ? encodePageCursor({ t: last.max_start_time, id: last.thread_id }) : '',
    };
  }

  /** A page of a thread's traces, oldest first (turn order), each numbered by its turn. */
  async traces(identity: Identity, threadId: string, q: V2ThreadTracesQuery): Promise<V2Page<Record<string, unknown>>> {
    const at = q.cursor
      ? decodePageCursor<{ c: string; n: number }>(q.cursor, ['query', 'cursor'], (v): v is { c: string; n: number } => typeof v.c === 'string' && typeof v.n === 'number')
      : null;
    const selects = (q.selects ?? []).map((s) => THREAD_TRACE_RUN_SELECT[s] ?? s);
    const res = await this.runs.query(
      identity,
      runQuerySchema.parse({
        session: [q.project_id],
        is_root: true,
        filter: threadFilter(threadId, q.filter),
        trace_filter: q.trace_filter,
        tree_filter: q.tree_filter,
        select: v2RecordFields(selects),
        order: 'asc',
        limit: q.page_size,
        cursor: at?.c,
      }),
    );
    const n = at?.n ?? 0;
    const items = res.runs.map((r, i) => {
      const run = toV2Run(r, selects);
      delete run.id;
      if ('latency_seconds' in run) {
        run.latency = run.latency_seconds;
        delete run.latency_seconds;
      }
      return { ...run, trace_id: r.trace_id, turn_number: n + i + 1 };
    });
    return { items, next_cursor: res.cursors.next ? encodePageCursor({ c: res.cursors.next, n: n + res.runs.length }) : '' };
  }

  /** Aggregates of one thread; a thread without traces (or of another workspace) answers zero turns. */
  async stats(identity: Identity, threadId: string, q: { session_id: string; selects: string[]; filter?: string }): Promise<Record<string, unknown>> {
    const w = this.runs.matchWhere(identity, { session: [q.session_id], is_root: true, filter: q.filter });
    const s = await this.repo.threadStats(w, threadId);
    const latency = (s.latency as (number | null)[] | undefined) ?? [];
    const turns = Number(s.turns ?? 0);
    const all: Record<string, unknown> = {
      TURNS: turns,
      FIRST_START_TIME: turns > 0 ? text(s.first_start_time) : undefined,
      LAST_START_TIME: turns > 0 ? text(s.last_start_time) : undefined,
      LAST_END_TIME: turns > 0 ? text(s.last_end_time) : undefined,
      LATENCY_P50: turns > 0 ? finite(latency[0]) : undefined,
      LATENCY_P99: turns > 0 ? finite(latency[1]) : undefined,
      PROMPT_TOKENS: Number(s.prompt_tokens ?? 0),
      COMPLETION_TOKENS: Number(s.completion_tokens ?? 0),
      TOTAL_TOKENS: Number(s.total_tokens ?? 0),
      PROMPT_COST: finite(s.prompt_cost),
      COMPLETION_COST: finite(s.completion_cost),
      TOTAL_COST: finite(s.total_cost),
      FEEDBACK_STATS: q.selects.includes('FEEDBACK_STATS') ? ((await this.feedbackOfThreads(w, threadId)) ?? {}) : undefined,
      ...(q.selects.some((sel) => DETAIL_SELECTS.includes(sel as DetailSelect)) ? await this.usageDetailsOfThread(identity, q.session_id, w, threadId) : {}),
    };
    const keys: Record<string, string> = { LATENCY_P50: 'latency_p50_seconds', LATENCY_P99: 'latency_p99_seconds' };
    const out: Record<string, unknown> = {};
    for (const sel of q.selects) if (all[sel] !== undefined) out[keys[sel] ?? sel.toLowerCase()] = all[sel];
    return out;
  }

  /**
   * The token and cost breakdowns summed per category over the thread's turns (the runs PROMPT_TOKENS sums), each as
   * `{raw}`. The breakdowns live in the runs' usage_metadata, read as the run reads answer them.
   */
  private async usageDetailsOfThread(identity: Identity, sessionId: string, w: { where: string; params: Record<string, unknown> }, threadId?: string) {
    const ids = await this.repo.threadRootIds(w, threadId, V2_UNPAGED_MAX_RUNS + 1);
    if (ids.length > V2_UNPAGED_MAX_RUNS) throw badRequest(`The threads have more than ${V2_UNPAGED_MAX_RUNS} turns; the *_DETAILS selects sum at most that many`);
    const sums: Record<DetailSelect, Record<string, number>> = { PROMPT_TOKEN_DETAILS: {}, COMPLETION_TOKEN_DETAILS: {}, PROMPT_COST_DETAILS: {}, COMPLETION_COST_DETAILS: {} };
    for (let i = 0; i < ids.length; i += DETAIL_PAGE) {
      const id = ids.slice(i, i + DETAIL_PAGE);
      const res = await this.runs.query(identity, runQuerySchema.parse({ session: [sessionId], id, select: ['id', 'outputs', 'extra'], limit: id.length }));
      for (const r of res.runs as Record<string, unknown>[]) {
        for (const sel of DETAIL_SELECTS) {
          for (const [k, n] of Object.entries((r[sel.toLowerCase()] as Record<string, number> | null | undefined) ?? {})) sums[sel][k] = (sums[sel][k] ?? 0) + n;
        }
      }
    }
    return Object.fromEntries(DETAIL_SELECTS.map((sel) => [sel, { raw: sums[sel] }]));
  }

  /** The project's root runs a threads query or aggregate covers (its filters, and a default window). */
  private rootsWhere(identity: Identity, q: V2ThreadQuery | V2ThreadsAggregateStats) {
    return this.runs.matchWhere(identity, {
      session: [q.project_id],
      is_root: true,
      filter: q.filter,
      trace_filter: q.trace_filter,
      tree_filter: q.tree_filter,
      start_time: q.min_start_time ?? new Date(Date.now() - V2_DEFAULT_WINDOW_MS).toISOString(),
      end_time: q.max_start_time,
    });
  }

  /** Aggregates over the threads of a project (POST /api/v2/threads/stats). */
  async aggregate(identity: Identity, q: V2ThreadsAggregateStats): Promise<Record<string, unknown>> {
    const w = this.rootsWhere(identity, q);
    const s = await this.repo.threadsAggregate(w);
    const traces = Number(s.trace_count ?? 0);
    const latency = (s.latency as (number | null)[] | undefined) ?? [];
    const firstToken = (s.first_token as (number | null)[] | undefined) ?? [];
    const all: Record<string, [string, unknown]> = {
      THREAD_COUNT: ['thread_count', Number(s.thread_count ?? 0)],
      TRACE_COUNT: ['trace_count', traces],
      TOTAL_TOKENS: ['total_tokens', Number(s.s_total_tokens ?? 0)],
      PROMPT_TOKENS: ['prompt_tokens', Number(s.s_prompt_tokens ?? 0)],
      COMPLETION_TOKENS: ['completion_tokens', Number(s.s_completion_tokens ?? 0)],
      TOTAL_COST: ['total_cost', finite(s.s_total_cost)],
      PROMPT_COST: ['prompt_cost', finite(s.s_prompt_cost)],
      COMPLETION_COST: ['completion_cost', finite(s.s_completion_cost)],
      ERROR_RATE: ['error_rate', traces > 0 ? Number(s.error_count ?? 0) / traces : undefined],
      STREAMING_RATE: ['streaming_rate', traces > 0 ? Number(s.streaming_count ?? 0) / traces : undefined],
      LATENCY_P50: ['latency_p50_seconds', traces > 0 ? finite(latency[0]) : undefined],
      LATENCY_P99: ['latency_p99_seconds', traces > 0 ? finite(latency[1]) : undefined],
      FIRST_TOKEN_P50: ['first_token_p50_seconds', Number(s.streaming_count ?? 0) > 0 ? finite(firstToken[0]) : undefined],
      FIRST_TOKEN_P99: ['first_token_p99_seconds', Number(s.streaming_count ?? 0) > 0 ? finite(firstToken[1]) : undefined],
      MEDIAN_TOKENS: ['median_tokens', finite(s.median_tokens)],
      THREAD_FEEDBACK_STATS: ['thread_feedback_stats', q.select.includes('THREAD_FEEDBACK_STATS') ? ((await this.feedbackOfThreads(w)) ?? {}) : undefined],
    };
    if (q.select.some((sel) => DETAIL_SELECTS.includes(sel as DetailSelect))) {
      for (const [sel, v] of Object.entries(await this.usageDetailsOfThread(identity, q.project_id, w))) all[sel] = [sel.toLowerCase(), v];
    }
    const out: Record<string, unknown> = {};
    for (const sel of q.select) {
      const hit = all[sel];
      if (hit && hit[1] !== undefined) out[hit[0]] = hit[1];
    }
    return out;
  }

  /** feedback_stats over every run of the matched threads' traces (one thread when `threadId` is given). */
  private feedbackOfThreads(w: { where: string; params: Record<string, unknown> }, threadId?: string) {
    const thread = threadId === undefined ? `${THREAD_ID_SQL} IS NOT NULL` : `${THREAD_ID_SQL} = {fb_thread:String}`;
    return this.feedbackStats.forRunsWhere(`tenant_id = {tenant:UUID} AND trace_id IN (SELECT trace_id FROM runs FINAL WHERE ${w.where} AND ${thread})`, {
      ...w.params,
      ...(threadId === undefined ? {} : { fb_thread: threadId }),
    });
  }

  private presentThread(r: ThreadRow): Record<string, unknown> {
    const out: Record<string, unknown> = {
      thread_id: r.thread_id,
      count: Number(r.count),
      min_start_time: r.min_start_time,
      max_start_time: r.max_start_time,
      start_time: r.min_start_time,
      first_trace_id: r.first_trace_id,
      last_trace_id: r.last_trace_id,
      trace_id: r.last_trace_id,
      first_inputs: v2Preview(text(r.first_inputs)),
      last_outputs: v2Preview(text(r.last_outputs)),
      last_error: text(r.last_error),
      latency_p50: finite(r.latency?.[0]),
      latency_p99: finite(r.latency?.[1]),
      total_tokens: Number(r.total_tokens),
      total_cost: finite(r.total_cost),
      num_errored_turns: Number(r.num_errored_turns),
    };
    for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
    return out;
  }
}
