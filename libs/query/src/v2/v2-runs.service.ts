import { Injectable } from '@nestjs/common';
import {
  projectListQuerySchema,
  runQuerySchema,
  toV2Run,
  v2RecordFields,
  type Identity,
  type Project,
  type RunQuery,
  type RunRecord,
  type V2RunQuery,
  type V2TraceQuery,
} from '@th/contracts';
import { notFound } from '@th/platform';
import { ProjectsService } from '../projects/projects.service';
import { RunsService } from '../runs/runs.service';
import { SharesRepository } from './shares.repository';
import { ThreadsRepository } from './threads.repository';

/** The v2 queries' default window when min_start_time is not given (the published API's: one day). */
export const V2_DEFAULT_WINDOW_MS = 24 * 3600_000;
/** Reads that answer a whole set without paging (a trace's runs, a shared trace) stop after this many runs. */
export const V2_UNPAGED_MAX_RUNS = 10_000;
const PAGE = 1000;

export type V2Run = Record<string, unknown>;
export interface V2Page<T> {
  items: T[];
  next_cursor: string;
}

/** What include_subtree_usage reads of each run of the page to find its subtree. */
const SUBTREE_KEYS = ['session_id', 'trace_id', 'dotted_order'] as const;

const defaultMin = () => new Date(Date.now() - V2_DEFAULT_WINDOW_MS).toISOString();

/** The v2 runs, traces and sessions reads: the classic reads (RunsService) answered in the generated clients' shapes. */
@Injectable()
export class V2RunsService {
  constructor(
    private readonly runs: RunsService,
    private readonly projects: ProjectsService,
    private readonly threads: ThreadsRepository,
    private readonly shares: SharesRepository,
  ) {}

  async query(identity: Identity, q: V2RunQuery): Promise<V2Page<V2Run>> {
    let sessions = q.project_ids;
    if (q.reference_dataset_id) {
      sessions = (await this.projects.list(identity, projectListQuerySchema.parse({ reference_dataset: [q.reference_dataset_id], limit: 1000 }))).map((p) => p.id);
      if (sessions.length === 0) return { items: [], next_cursor: '' };
    }
    const res = await this.runs.query(
      identity,
      runQuerySchema.parse({
        session: sessions,
        id: q.ids,
        trace: q.trace_id,
        reference_example: q.reference_examples,
        run_type: q.run_type?.toLowerCase(),
        is_root: q.is_root,
        error: q.has_error,
        filter: q.filter,
        trace_filter: q.trace_filter,
        tree_filter: q.tree_filter,
        // With a dataset the window starts at its experiments (the published API derives it the same way).
        start_time: q.min_start_time ?? (q.reference_dataset_id ? undefined : defaultMin()),
        end_time: q.max_start_time,
        select: q.include_subtree_usage ? [...new Set([...v2RecordFields(q.selects), ...SUBTREE_KEYS])] : v2RecordFields(q.selects),
        limit: q.page_size,
        cursor: q.cursor,
      }),
      { feedbackModifiedAt: { min: q.min_feedback_modified_at, max: q.max_feedback_modified_at } },
    );
    const runs = q.include_subtree_usage ? await this.withSubtreeUsage(identity, res.runs) : res.runs;
    return { items: await this.present(identity, runs, q.selects), next_cursor: res.cursors.next ?? '' };
  }

  /**
   * include_subtree_usage: tokens and costs summed over each run's subtree and its earliest first token, from every
   * descendant whatever the query's filters and window; a run with no descendant keeps its own values.
   */
  private async withSubtreeUsage(identity: Identity, runs: Partial<RunRecord>[]): Promise<Partial<RunRecord>[]> {
    if (runs.length === 0) return runs;
    const sessions = [...new Set(runs.map((r) => String(r.session_id)))];
    const usage = await this.threads.subtreeUsage(
      this.runs.matchWhere(identity, { session: sessions }),
      runs.map((r) => String(r.trace_id)),
      runs.map((r) => String(r.dotted_order)),
    );
    return runs.map((r) => {
      const u = usage.get(String(r.dotted_order));
      if (!u || u.runs <= 1) return r;
      const { runs: _runs, ...sums } = u;
      const own = r.first_token_time ?? null;
      const first = own === null || (sums.first_token_time !== null && Date.parse(sums.first_token_time) < Date.parse(own)) ? sums.first_token_time : own;
      return { ...r, ...sums, first_token_time: first };
    });
  }

  async get(identity: Identity, runId: string, projectId: string, selects: string[] | undefined): Promise<V2Run> {
    const res = await this.runs.query(identity, runQuerySchema.parse({ id: [runId], session: [projectId], select: v2RecordFields(selects), limit: 1 }));
    if (res.runs.length === 0) throw notFound(`Run ${runId}`);
    return (await this.present(identity, res.runs, selects))[0];
  }

  /** The web app's page of a run (the caller names its project and trace, as the published API asks). */
  url(identity: Identity, runId: string, projectId: string, traceId: string, origin: string): { url: string } {
    return { url: `${origin}/o/${identity.organization_id}/projects/p/${projectId}/r/${runId}?trace_id=${traceId}` };
  }

  /** A page of traces: each root run and the sums over the trace's runs. */
  async traces(identity: Identity, q: V2TraceQuery): Promise<V2Page<{ root_run: V2Run; trace_aggregates: Record<string, unknown> }>> {
    const res = await this.runs.query(
      identity,
      runQuerySchema.parse({
        session: [q.project_id],
        is_root: true,
        // A root run's id is its trace's id.
        id: q.trace_ids,
        trace_filter: q.trace_filter,
        tree_filter: q.tree_filter,
        start_time: q.min_start_time ?? defaultMin(),
        end_time: q.max_start_time,
        select: v2RecordFields(q.selects),
        limit: q.page_size,
        cursor: q.cursor,
      }),
      { feedbackModifiedAt: { min: q.min_feedback_modified_at, max: q.max_feedback_modified_at } },
    );
    const ids = res.runs.map((r) => String(r.trace_id));
    const aggregates = await this.threads.traceAggregates(this.runs.matchWhere(identity, { session: [q.project_id] }), ids);
    const roots = await this.present(identity, res.runs, q.selects);
    return {
      items: roots.map((root_run, i) => {
        const a = aggregates.get(ids[i]);
        return { root_run, trace_aggregates: a ? { total_tokens: a.total_tokens, total_cost: a.total_cost ?? undefined, first_token_time: a.first_token_time ?? undefined } : {} };
      }),
      next_cursor: res.cursors.next ?? '',
    };
  }

  /** Every run of a trace (bounded by V2_UNPAGED_MAX_RUNS), oldest first. */
  async traceRuns(
    identity: Identity,
    traceId: string,
    q: { project_id: string; filter?: string; min_start_time?: string; max_start_time?: string; selects?: string[] },
  ): Promise<{ items: V2Run[] }> {
    const runs = await this.all(identity, { session: [q.project_id], trace: traceId, filter: q.filter, start_time: q.min_start_time, end_time: q.max_start_time, select: v2RecordFields(q.selects) });
    return { items: await this.present(identity, runs, q.selects) };
  }

  /** GET /api/v2/sessions: a cursor page over the projects list. */
  async sessions(identity: Identity, q: Record<string, unknown>, offset: number, pageSize: number): Promise<{ items: (Project & { type: string })[]; more: boolean }> {
    const rows = await this.projects.list(identity, projectListQuerySchema.parse({ ...q, offset, limit: pageSize + 1 }));
    return { items: rows.slice(0, pageSize).map((p) => ({ ...p, type: p.reference_dataset_id ? 'EXPERIMENT' : 'PROJECT' })), more: rows.length > pageSize };
  }

  /** The runs a classic query matches, page after page, up to V2_UNPAGED_MAX_RUNS (oldest first). */
  async all(identity: Identity, q: Partial<RunQuery>): Promise<Partial<RunRecord>[]> {
    const out: Partial<RunRecord>[] = [];
    let cursor: string | null = null;
    do {
      const res = await this.runs.query(identity, runQuerySchema.parse({ ...q, order: 'asc', limit: PAGE, cursor }));
      out.push(...res.runs);
      cursor = res.cursors.next;
    } while (cursor && out.length < V2_UNPAGED_MAX_RUNS);
    return out;
  }

  /** Runs in the v2 shape; a SHARE_URL select reads the runs' share tokens. */
  async present(identity: Identity, runs: Partial<RunRecord>[], selects: readonly string[] | null | undefined): Promise<V2Run[]> {
    const items = runs.map((r) => toV2Run(r, selects));
    if (selects?.includes('SHARE_URL')) {
      const tokens = await this.shares.tokensOfRuns(identity, items.map((r) => String(r.id)));
      for (const r of items) {
        const t = tokens.get(String(r.id));
        if (t) r.share_url = `/public/${t}/r`;
      }
    }
    return items;
  }
}
