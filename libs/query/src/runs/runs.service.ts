import { Injectable } from '@nestjs/common';
import {
  RUN_FIELDS,
  RUN_RECORD_FIELDS,
  type RunFieldDef,
  type Identity,
  type RunQuery,
  type RunRecord,
  type RunStats,
  type RunStatsQuery,
} from '@th/contracts';
import { DomainError, ErrorCode, ValidationFailed, forbidden, notFound } from '@th/platform';
import { compileFilter, FilterSyntaxError } from '@th/run-filter';
import { usageDetails } from '@th/llm';
import type { QueryParams } from '@th/clickhouse';
import { RunsRepository, type Condition, type StoredRun } from './runs.repository';
import { FeedbackStatsRepository } from './feedback-stats.repository';
import { RunAttachmentSigner } from './attachment-urls';

const DEFAULT_SELECT = RUN_RECORD_FIELDS;
/** Fields every run of a query answers whatever its `select`: the SDKs build their Run from them. */
const ALWAYS_SELECTED: readonly (keyof RunRecord)[] = ['id', 'name', 'run_type', 'start_time', 'trace_id'];
/** Up to this many ids, a query naming runs locates them first (beyond, the general path scans the workspace). */
const LOCATED_IDS_MAX = 1_000;

/** How each record field's stored value is answered (RUN_FIELDS: the column's type, `json`, `read`). */
type ReadAs = 'json' | 'bool' | 'count' | 'plain' | NonNullable<RunFieldDef['read']>;
const READ_AS = Object.fromEntries(
  Object.entries(RUN_FIELDS).map(([field, def]: [string, RunFieldDef]): [string, ReadAs] => {
    if (def.read) return [field, def.read];
    if (def.column?.json) return [field, 'json'];
    if (def.column?.type === 'Bool') return [field, 'bool'];
    if (def.column?.type === 'UInt64') return [field, 'count'];
    return [field, 'plain'];
  }),
) as Record<keyof RunRecord, ReadAs>;

/** What a query takes besides its published body (the v2 API's bounds on feedback conditions). */
export interface RunQueryOptions {
  /** Bounds on feedback `modified_at` (min inclusive, max exclusive) for the filters' feedback conditions. */
  feedbackModifiedAt?: { min?: string; max?: string };
}

interface Cursor {
  t: string;
  id: string;
}

/** Tracing reads: one run, filtered lists with keyset paging, and aggregate stats. */
@Injectable()
export class RunsService {
  constructor(
    private readonly runs: RunsRepository,
    private readonly feedbackStats: FeedbackStatsRepository,
    private readonly signer: RunAttachmentSigner,
  ) {}

  /** A run attachment through its signed URL (see RunAttachmentSigner). */
  async attachment(tenantId: string, runId: string, name: string, expires: number, signature: string): Promise<{ mime_type: string; data: Buffer }> {
    if (!(await this.signer.verify(tenantId, runId, name, expires, signature))) throw forbidden('The attachment URL is invalid or has expired');
    const row = await this.runs.attachment({ tenant_id: tenantId }, runId, name);
    if (!row) throw notFound(`Attachment ${name} of run ${runId}`);
    return { mime_type: row.mime_type, data: Buffer.from(row.data, 'base64') };
  }

  async get(identity: Identity, id: string): Promise<Partial<RunRecord>> {
    // The feedback stats need only the id: read alongside the run, on another connection.
    const [row, stats] = await Promise.all([this.runs.getById(identity, id, DEFAULT_SELECT), this.feedbackStats.forRuns(identity, [id])]);
    if (!row) throw notFound(`Run ${id}`);
    const run = this.present(identity, row, DEFAULT_SELECT, await this.signer.urlSigner(identity.tenant_id));
    run.feedback_stats = stats.get(id) ?? null;
    return run;
  }

  async query(identity: Identity, q: RunQuery, opts: RunQueryOptions = {}): Promise<{ runs: Partial<RunRecord>[]; cursors: { next: string | null; prev: null } }> {
    const conditions = this.conditions(identity, q, opts);
    if (q.cursor) {
      const c = decodeCursor(q.cursor);
      const op = q.order === 'asc' ? '>' : '<';
      conditions.push({
        sql: `(start_time, id) ${op} (parseDateTime64BestEffort({cursor_t:String}, 6, 'UTC'), toUUID({cursor_id:String}))`,
        params: { cursor_t: c.t, cursor_id: c.id },
      });
    }
    // Attachments are read whatever the select: a run that has some answers its s3_urls (the SDK's default
    // select of list_runs leaves them out, and its Run reads them).
    const requested = q.select && q.select.length > 0 ? q.select : DEFAULT_SELECT;
    const select = [...new Set<keyof RunRecord>([...ALWAYS_SELECTED, ...requested, 'attachments'])];
    // Named runs are found through the locator first: their read is bounded by their own sorting keys.
    const rows =
      q.id && q.id.length > 0 && q.id.length <= LOCATED_IDS_MAX
        ? await this.runs.listLocated(identity, await this.runs.locate(identity, q.id), conditions, select, q.order, q.limit + 1)
        : await this.runs.list(identity, conditions, select, q.order, q.limit + 1);
    const page = rows.slice(0, q.limit);
    const last = page[page.length - 1];
    const next = rows.length > q.limit && last ? encodeCursor({ t: String(last.start_time), id: String(last.id) }) : null;
    const sign = await this.signer.urlSigner(identity.tenant_id);
    const runs = page.map((r) => this.present(identity, r, select, sign, !requested.includes('attachments')));
    if (select.includes('feedback_stats')) {
      // The stored rows always carry the id, even when the caller did not select it.
      const stats = await this.feedbackStats.forRuns(identity, page.map((r) => String(r.id)));
      runs.forEach((r, i) => (r.feedback_stats = stats.get(String(page[i].id)) ?? null));
    }
    return { runs, cursors: { next, prev: null } };
  }

  async stats(identity: Identity, q: RunStatsQuery): Promise<RunStats> {
    const conditions = this.conditions(identity, { ...q, limit: 1, order: 'desc' });
    const [s, feedbackStats] = await Promise.all([
      this.runs.stats(identity, conditions),
      (() => {
        const { where, params } = this.runs.runsWhere(identity, conditions);
        return this.feedbackStats.forRunsWhere(where, params);
      })(),
    ]);
    const count = Number(s.run_count ?? 0);
    const latency = (s.latency as (number | null)[] | undefined) ?? [];
    const firstToken = (s.first_token as (number | null)[] | undefined) ?? [];
    const finite = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
    const errorCount = Number(s.error_count ?? 0);
    return {
      run_count: count,
      error_count: errorCount,
      error_rate: count > 0 ? errorCount / count : null,
      latency_p50: count > 0 ? finite(latency[0]) : null,
      latency_p99: count > 0 ? finite(latency[1]) : null,
      first_token_p50: Number(s.streaming_count ?? 0) > 0 ? finite(firstToken[0]) : null,
      first_token_p99: Number(s.streaming_count ?? 0) > 0 ? finite(firstToken[1]) : null,
      total_tokens: Number(s.s_total_tokens ?? 0),
      prompt_tokens: Number(s.s_prompt_tokens ?? 0),
      completion_tokens: Number(s.s_completion_tokens ?? 0),
      median_tokens: finite(s.median_tokens),
      total_cost: finite(s.s_total_cost),
      prompt_cost: finite(s.s_prompt_cost),
      completion_cost: finite(s.s_completion_cost),
      streaming_rate: count > 0 ? Number(s.streaming_count ?? 0) / count : null,
      last_run_start_time: typeof s.last_run_start_time === 'string' ? s.last_run_start_time : null,
      feedback_stats: feedbackStats,
    };
  }

  /** The WHERE clause (tenant-bound) of the runs a query's filters match, for reads that aggregate them (threads, traces). */
  matchWhere(identity: Identity, q: RunStatsQuery): { where: string; params: QueryParams } {
    return this.runs.runsWhere(identity, this.conditions(identity, { ...q, limit: 1, order: 'desc' }));
  }

  private conditions(identity: Identity, q: Omit<RunQuery, 'select' | 'cursor'> & Partial<Pick<RunQuery, 'select' | 'cursor'>>, opts: RunQueryOptions = {}): Condition[] {
    const c: Condition[] = [];
    // One project (the usual case) as an equality: ClickHouse then reads the sorting key in order.
    if (q.session && q.session.length === 1) c.push({ sql: 'session_id = {session:UUID}', params: { session: q.session[0] } });
    else if (q.session && q.session.length > 1) c.push({ sql: 'session_id IN {session:Array(UUID)}', params: { session: q.session } });
    if (q.id && q.id.length > 0) c.push({ sql: 'id IN {ids:Array(UUID)}', params: { ids: q.id } });
    if (q.trace) c.push({ sql: 'trace_id = {trace:UUID}', params: { trace: q.trace } });
    if (q.parent_run) c.push({ sql: 'parent_run_id = {parent:UUID}', params: { parent: q.parent_run } });
    if (q.run_type) c.push({ sql: 'run_type = {run_type:String}', params: { run_type: q.run_type } });
    if (q.is_root !== null && q.is_root !== undefined) c.push({ sql: 'is_root = {is_root:Bool}', params: { is_root: q.is_root } });
    if (q.error !== null && q.error !== undefined) c.push({ sql: q.error ? 'error IS NOT NULL' : 'error IS NULL', params: {} });
    if (q.start_time) c.push({ sql: "start_time >= parseDateTime64BestEffort({start:String}, 6, 'UTC')", params: { start: q.start_time } });
    if (q.end_time) c.push({ sql: "start_time < parseDateTime64BestEffort({end:String}, 6, 'UTC')", params: { end: q.end_time } });
    if (q.reference_example && q.reference_example.length > 0) {
      c.push({ sql: 'reference_example_id IN {ref:Array(UUID)}', params: { ref: q.reference_example } });
    }
    if (q.tags && q.tags.length > 0) c.push({ sql: 'hasAll(tags, {tags:Array(String)})', params: { tags: q.tags } });
    Object.entries(q.metadata ?? {}).forEach(([k, v], i) => {
      c.push({ sql: `metadata[{mk${i}:String}] = {mv${i}:String}`, params: { [`mk${i}`]: k, [`mv${i}`]: String(v) } });
    });
    if (q.execution_order === 1) c.push({ sql: 'is_root', params: {} });
    let usesFeedback = false;
    const compile = (expr: string, prefix: string, field: string) => {
      try {
        const compiled = compileFilter(expr, { paramPrefix: prefix, tenantParam: 'tenant', feedbackModifiedAt: opts.feedbackModifiedAt });
        usesFeedback ||= compiled.usesFeedback;
        return compiled;
      } catch (err) {
        if (err instanceof FilterSyntaxError) throw new ValidationFailed([{ loc: ['body', field], msg: err.message, type: 'value_error', ctx: { position: err.position } }]);
        throw err;
      }
    };
    if (q.filter) c.push(compile(q.filter, 'f_', 'filter'));
    if (q.trace_filter) {
      const f = compile(q.trace_filter, 'tf_', 'trace_filter');
      c.push({ sql: `trace_id IN (SELECT id FROM runs FINAL WHERE tenant_id = {tenant:UUID} AND is_root AND (${f.sql}))`, params: f.params });
    }
    if (q.tree_filter) {
      const f = compile(q.tree_filter, 'tr_', 'tree_filter');
      c.push({ sql: `trace_id IN (SELECT trace_id FROM runs FINAL WHERE tenant_id = {tenant:UUID} AND (${f.sql}))`, params: f.params });
    }
    const bounds = opts.feedbackModifiedAt;
    if (bounds && (bounds.min !== undefined || bounds.max !== undefined) && !usesFeedback) {
      const field = bounds.min !== undefined ? 'min_feedback_modified_at' : 'max_feedback_modified_at';
      throw new ValidationFailed([{ loc: ['body', field], msg: `${field} applies to feedback conditions (feedback_key, feedback_score, feedback_value) in the filters, and there is none`, type: 'value_error' }]);
    }
    if (q.query) {
      c.push({ sql: 'positionCaseInsensitive(concat(name, inputs, outputs, ifNull(error, \'\')), {q:String}) > 0', params: { q: q.query } });
    }
    void identity;
    return c;
  }

  /**
   * A stored row as the API answers it. The `attachments` field is answered as the SDKs read it: `s3_urls`,
   * `{"attachment.<name>": {presigned_url, mime_type}}` with signed download URLs (`sign`).
   */
  private present(
    identity: Identity,
    row: StoredRun,
    fields: readonly (keyof RunRecord)[],
    sign: ((runId: string, name: string) => string) | null,
    /** Leave s3_urls out when the run has no attachments (they were not selected). */
    omitNoAttachments = false,
  ): Partial<RunRecord> {
    const out: Record<string, unknown> = {};
    for (const f of fields) {
      const v = row[f];
      switch (READ_AS[f]) {
        case 'json':
          out[f] = typeof v === 'string' && v !== '' ? JSON.parse(v) : null;
          break;
        case 'jsonList':
          out[f] = typeof v === 'string' && v !== '' ? JSON.parse(v) : [];
          break;
        case 'attachments': {
          const stored = (typeof v === 'string' && v !== '' ? JSON.parse(v) : {}) as Record<string, { mime_type: string }>;
          if (omitNoAttachments && Object.keys(stored).length === 0) continue;
          out.s3_urls = Object.fromEntries(
            Object.entries(stored).map(([name, a]) => [`attachment.${name}`, { presigned_url: sign ? sign(String(row.id), name) : null, mime_type: a.mime_type }]),
          );
          break;
        }
        case 'appPath':
          out[f] = `/o/${identity.organization_id}/projects/p/${String(row.session_id)}/r/${String(row.id)}?trace_id=${String(row.trace_id)}`;
          break;
        case 'tenant':
          out[f] = identity.tenant_id;
          break;
        case 'bool':
          out[f] = v === true || v === 1 || v === '1';
          break;
        case 'count':
          out[f] = Number(v ?? 0);
          break;
        default:
          out[f] = v ?? null;
      }
    }
    // The token and cost breakdowns of usage_metadata, answered where the SDK's Run reads them.
    if (fields.includes('outputs') && fields.includes('extra')) Object.assign(out, usageDetails(out.outputs, out.extra));
    return out as Partial<RunRecord>;
  }
}

function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

function decodeCursor(raw: string): Cursor {
  try {
    const c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Cursor;
    if (typeof c.t === 'string' && typeof c.id === 'string' && /^[0-9a-f-]{36}$/i.test(c.id)) return c;
  } catch {
    // fall through
  }
  throw new DomainError(ErrorCode.Validation, 'invalid cursor', [{ loc: ['body', 'cursor'], msg: 'Invalid cursor', type: 'value_error' }]);
}
