import { useEffect, useMemo, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { useInfiniteQuery, useMutation, useQuery } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { Example, Feedback, FeedbackCreate, FeedbackUpdate, RunQuery, RunRecord, RunResponse } from '@th/contracts';
import { api } from '../api';
import { Messages, chatOf } from '../components/messages';
import { JsonView } from '../components/json-view';
import { LazyJson } from '../components/lazy-json';
import { loadRun, workerSource, type LoadedRun } from '../components/run-loader';
import { fmtCost, fmtInt, fmtLatency, fmtTime } from '../format';
import { Link, paths, setSearchParam, useLocation } from '../router';
import { Status } from './runs';

type TreeRun = Pick<RunRecord, 'id' | 'name' | 'run_type' | 'status' | 'dotted_order' | 'latency' | 'total_tokens' | 'prompt_tokens' | 'completion_tokens' | 'total_cost' | 'parent_run_id' | 'start_time' | 'end_time'>;
const TREE_SELECT: NonNullable<RunQuery['select']> = [
  'id', 'name', 'run_type', 'status', 'dotted_order', 'latency', 'total_tokens', 'prompt_tokens', 'completion_tokens', 'total_cost', 'parent_run_id', 'start_time', 'end_time',
];
/**
 * Runs per read of the tree: the contract's RUN_QUERY_TREE_MAX_LIMIT (a trace with light fields only), so a
 * 10,000-run trace is one request. Only types of @th/contracts reach this bundle, hence the number here.
 */
const TREE_PAGE = 10_000;
const MAX_TREE_PAGES = 5;
const POLL_MS = 2_000;
const NODE_PX = 34;

export function TraceView({ tenant, project, runId, poll }: { tenant: string; project: string; runId: string; poll: boolean }) {
  const location = useLocation();
  const selected = location.searchParams.get('selected') ?? runId;
  // The linked run's trace, without its inputs and outputs (those are read for the selected run only).
  const linked = useQuery({
    queryKey: ['run-trace', tenant, runId],
    queryFn: async ({ signal }) => {
      const res = await api<{ runs: Pick<RunRecord, 'id' | 'trace_id'>[] }>('/runs/query', { tenant, signal, json: { id: [runId], select: ['trace_id'], limit: 1 } });
      if (!res.runs[0]) throw new Error(`Run ${runId} not found`);
      return res.runs[0];
    },
  });
  // The SDK links a trace by its root, whose id is the trace's: the tree is read at once with that guess, in
  // parallel with the linked run's read, and read again only if the run belongs to another trace.
  const traceId = linked.data?.trace_id ?? runId;
  // The whole tree in one read (light fields only); a trace past TREE_PAGE runs goes on page after page.
  const tree = useInfiniteQuery({
    queryKey: ['trace', tenant, traceId],
    initialPageParam: null as string | null,
    queryFn: ({ pageParam, signal }) =>
      api<{ runs: TreeRun[]; cursors: { next: string | null } }>('/runs/query', {
        tenant,
        signal,
        json: { trace: traceId, session: [project], limit: TREE_PAGE, cursor: pageParam, select: TREE_SELECT, order: 'asc' },
      }),
    getNextPageParam: (last, pages) => (pages.length < MAX_TREE_PAGES ? last.cursors.next : null),
    // ?poll=true (the SDK's links): refresh until every run of the trace has ended.
    refetchInterval: (q) => (poll && (!q.state.data || q.state.data.pages.some((p) => p.runs.some((r) => !r.end_time))) ? POLL_MS : false),
  });
  useEffect(() => {
    if (tree.hasNextPage && !tree.isFetchingNextPage && !tree.isFetching) void tree.fetchNextPage();
  }, [tree]);
  const all = useMemo(
    () => (tree.data?.pages.flatMap((p) => p.runs) ?? []).sort((a, b) => (a.dotted_order < b.dotted_order ? -1 : a.dotted_order > b.dotted_order ? 1 : 0)),
    [tree.data],
  );
  const pane = useRef<HTMLElement>(null);
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const [search, setSearch] = useState('');
  const runs = useMemo(() => visibleRuns(all, collapsed, search), [all, collapsed, search]);
  const parents = useMemo(() => new Set(all.map((r) => r.parent_run_id).filter((id): id is string => !!id)), [all]);
  const rootDepth = all.length ? depthOf(all[0].dotted_order) : 0;
  const [waterfall, setWaterfall] = useState(true);
  const span = useMemo(() => timeSpan(all), [all]);
  const select = (id: string) => setSearchParam('selected', id === runId ? null : id);
  const toggle = (id: string, open?: boolean) =>
    setCollapsed((prev) => {
      const next = new Set(prev);
      if (open ?? next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  const virtual = useVirtualizer({ count: runs.length, getScrollElement: () => pane.current, estimateSize: () => NODE_PX, overscan: 20 });
  const onKey = (e: KeyboardEvent<HTMLUListElement>) => {
    const i = runs.findIndex((r) => r.id === selected);
    if ((e.key === 'ArrowLeft' || e.key === 'ArrowRight') && i >= 0 && parents.has(runs[i].id)) {
      e.preventDefault();
      toggle(runs[i].id, e.key === 'ArrowRight');
      return;
    }
    const next = e.key === 'ArrowDown' ? i + 1 : e.key === 'ArrowUp' ? i - 1 : e.key === 'Home' ? 0 : e.key === 'End' ? runs.length - 1 : -2;
    if (next === -2 || next < 0 || next >= runs.length) return;
    e.preventDefault();
    select(runs[next].id);
    // Only the rows in view exist: bring the next one in, then focus it once drawn.
    virtual.scrollToIndex(next);
    requestAnimationFrame(() => document.getElementById(`node-${runs[next].id}`)?.focus());
  };

  return (
    <section aria-labelledby="trace-title" className="trace">
      <p className="crumbs">
        <Link to={paths.projects(tenant)}>Projects</Link> / <Link to={paths.runs(tenant, project)}>Runs</Link> /{' '}
        <Link to={paths.threads(tenant, project)}>Threads</Link> /
      </p>
      <h1 id="trace-title">Trace{all[0] ? ` · ${all[0].name}` : ''}</h1>
      {linked.isError && <p role="alert" className="error">{linked.error.message}</p>}
      {poll && all.some((r) => !r.end_time) && <p className="muted" aria-live="polite">Live: refreshing every {POLL_MS / 1000} s until the trace ends.</p>}
      <div className="split">
        <nav aria-label="Run tree" className="tree-pane" ref={pane}>
          {(tree.isPending || (linked.isPending && all.length === 0)) && <p aria-busy="true">Loading…</p>}
          <label className="tree-search">
            Search in trace <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} />
          </label>
          <div className="tree-bar">
            <p className="muted tree-count" aria-live="polite" data-testid="tree-count">
              {all.length.toLocaleString('en-US')} runs{tree.hasNextPage ? ', loading more…' : ''}
            </p>
            <button type="button" aria-pressed={waterfall} onClick={() => setWaterfall((w) => !w)}>
              Waterfall
            </button>
          </div>
          <ul role="tree" aria-label="Runs of the trace" className="tree" onKeyDown={onKey} style={{ height: virtual.getTotalSize(), position: 'relative' }}>
            {virtual.getVirtualItems().map(({ index, start }) => {
              const r = runs[index];
              return (
              <li
                key={r.id}
                aria-setsize={runs.length}
                aria-posinset={index + 1}
                id={`node-${r.id}`}
                role="treeitem"
                aria-selected={r.id === selected}
                aria-expanded={parents.has(r.id) ? !collapsed.has(r.id) : undefined}
                aria-level={depthOf(r.dotted_order) - rootDepth + 1}
                tabIndex={r.id === selected ? 0 : -1}
                className="node"
                data-run-id={r.id}
                style={{ position: 'absolute', top: 0, left: 0, right: 0, height: NODE_PX, transform: `translateY(${start}px)`, paddingLeft: `${(depthOf(r.dotted_order) - rootDepth) * 16 + 8}px` }}
                onClick={() => select(r.id)}
              >
                {parents.has(r.id) ? (
                  <button
                    type="button"
                    className="twisty"
                    tabIndex={-1}
                    aria-label={`${collapsed.has(r.id) ? 'Expand' : 'Collapse'} ${r.name}`}
                    onClick={(e) => {
                      e.stopPropagation();
                      toggle(r.id);
                    }}
                  >
                    {collapsed.has(r.id) ? '▸' : '▾'}
                  </button>
                ) : (
                  <span className="twisty" />
                )}
                <span className={`badge t-${r.run_type}`}>{r.run_type}</span>
                <span className="node-name">{r.name}</span>
                <Status status={r.status} />
                <span className="node-meta">
                  {fmtLatency(r.latency)}
                  {r.total_tokens > 0 && <> · <span data-testid="tokens">{fmtInt(r.total_tokens)} tokens</span></>}
                </span>
                {waterfall && <Bar run={r} span={span} />}
              </li>
              );
            })}
          </ul>
        </nav>
        <div className="detail-pane">{selected && <RunDetail tenant={tenant} project={project} runId={selected} traceRoot={all[0]?.id} />}</div>
      </div>
    </section>
  );
}

const depthOf = (dotted: string) => dotted.split('.').length;
const ms = (iso: string | null | undefined): number | null => {
  if (!iso) return null;
  const t = Date.parse(iso.endsWith('Z') || /[+-]\d\d:\d\d$/.test(iso) ? iso : `${iso}Z`);
  return Number.isNaN(t) ? null : t;
};

interface Span {
  start: number;
  length: number;
  now: number;
}
/** The trace's first start and last end (a run still going ends now). */
function timeSpan(runs: TreeRun[]): Span {
  const now = Date.now();
  let start = Infinity;
  let end = -Infinity;
  for (const r of runs) {
    const s = ms(r.start_time);
    if (s === null) continue;
    start = Math.min(start, s);
    end = Math.max(end, ms(r.end_time) ?? now);
  }
  return Number.isFinite(start) ? { start, length: Math.max(1, end - start), now } : { start: now, length: 1, now };
}

/** The run's place on the trace's timeline, in the tree's row: the waterfall lines up with the tree by construction. */
function Bar({ run, span }: { run: TreeRun; span: Span }) {
  const s = ms(run.start_time) ?? span.start;
  const e = ms(run.end_time) ?? span.now;
  const left = ((s - span.start) / span.length) * 100;
  const width = Math.max(0.3, ((e - s) / span.length) * 100);
  const label = `starts at +${fmtLatency((s - span.start) / 1000)}, takes ${fmtLatency((e - s) / 1000)}`;
  return (
    <span className="wf" title={label} data-testid="wf">
      <span className={`wf-bar t-${run.run_type}${run.status === 'error' ? ' failed' : ''}`} style={{ left: `${Math.min(left, 99.7)}%`, width: `${Math.min(width, 100 - Math.min(left, 99.7))}%` }} />
      <span className="visually-hidden">{label}</span>
    </span>
  );
}

/**
 * The tree's rows in dotted_order: without the descendants of collapsed runs, and, when searching, only
 * the runs whose name or type matches with their ancestors (a dotted_order is its ancestors' plus a part).
 */
function visibleRuns(all: TreeRun[], collapsed: ReadonlySet<string>, search: string): TreeRun[] {
  const q = search.trim().toLowerCase();
  let keep: Set<string> | null = null;
  if (q) {
    keep = new Set();
    const byOrder = new Map(all.map((r) => [r.dotted_order, r.id]));
    for (const r of all) {
      if (!r.name.toLowerCase().includes(q) && !r.run_type.toLowerCase().includes(q)) continue;
      const parts = r.dotted_order.split('.');
      for (let n = 1; n <= parts.length; n++) {
        const id = byOrder.get(parts.slice(0, n).join('.'));
        if (id) keep.add(id);
      }
    }
  }
  const out: TreeRun[] = [];
  let hiddenUnder: string | null = null;
  for (const r of all) {
    if (hiddenUnder !== null && r.dotted_order.startsWith(`${hiddenUnder}.`)) continue;
    hiddenUnder = null;
    if (keep && !keep.has(r.id)) continue;
    out.push(r);
    if (collapsed.has(r.id) && !keep) hiddenUnder = r.dotted_order;
  }
  return out;
}

function RunDetail({ tenant, project, runId, traceRoot }: { tenant: string; project: string; runId: string; traceRoot?: string }) {
  // Read and parsed in a worker: only the fields of moderate size come to the page whole.
  const run = useQuery({ queryKey: ['run-detail', tenant, runId], queryFn: () => loadRun(tenant, runId), staleTime: 30_000 });
  const loaded = run.data;
  const r = loaded?.run;
  const chat = useMemo(() => (r ? chatOf(r as RunRecord) : null), [r]);
  if (run.isPending) return <p aria-busy="true">Loading…</p>;
  if (run.isError) return <p role="alert" className="error">{run.error.message}</p>;
  if (!r || !loaded) return null;
  const metadata = (r.extra as { metadata?: Record<string, unknown> } | null)?.metadata;
  const ttft = firstTokenMs(r);
  return (
    <article aria-labelledby="run-title" className="detail">
      <h2 id="run-title">{r.name}</h2>
      <dl className="facts">
        <dt>Type</dt>
        <dd>{r.run_type}</dd>
        <dt>Status</dt>
        <dd><Status status={r.status} /></dd>
        <dt>Start</dt>
        <dd>{fmtTime(r.start_time)}</dd>
        <dt>Latency</dt>
        <dd>{fmtLatency(r.latency)}</dd>
        {ttft !== null && (
          <>
            <dt>First token</dt>
            <dd data-testid="ttft">{fmtLatency(ttft / 1000)}</dd>
          </>
        )}
        <dt>Tokens</dt>
        <dd data-testid="run-tokens">{fmtInt(r.total_tokens)} ({fmtInt(r.prompt_tokens)} prompt, {fmtInt(r.completion_tokens)} completion)</dd>
        <dt>Cost</dt>
        <dd>{fmtCost(r.total_cost)}</dd>
        {r.llm?.model && (
          <>
            <dt>Model</dt>
            <dd>{r.llm.provider ? `${r.llm.provider} / ` : ''}{r.llm.model}</dd>
          </>
        )}
      </dl>
      <p className="links">
        {r.parent_run_id && <Link to={`${paths.trace(tenant, project, r.parent_run_id)}`}>Parent run</Link>}
        {traceRoot && traceRoot !== r.id && <Link to={paths.trace(tenant, project, traceRoot)}>Trace root</Link>}
        {r.reference_example_id && <ExampleLink tenant={tenant} exampleId={r.reference_example_id} />}
      </p>
      {r.error && (
        <section aria-labelledby="error-title">
          <h3 id="error-title">Error</h3>
          <ErrorText error={r.error} />
        </section>
      )}
      {chat && (
        <section aria-labelledby="chat-title">
          <h3 id="chat-title">Messages</h3>
          <Messages messages={chat} />
        </section>
      )}
      <section aria-labelledby="inputs-title">
        <h3 id="inputs-title">Inputs</h3>
        <Field loaded={loaded} field="inputs" label="Inputs" />
      </section>
      <section aria-labelledby="outputs-title">
        <h3 id="outputs-title">Outputs</h3>
        <Field loaded={loaded} field="outputs" label="Outputs" />
      </section>
      <Attachments run={r} />
      {r.tags && r.tags.length > 0 && (
        <section aria-labelledby="tags-title">
          <h3 id="tags-title">Tags</h3>
          <ul className="tags">{r.tags.map((t) => <li key={t}>{t}</li>)}</ul>
        </section>
      )}
      {metadata && Object.keys(metadata).length > 0 && (
        <section aria-labelledby="metadata-title">
          <h3 id="metadata-title">Metadata</h3>
          <JsonView value={metadata} label="Metadata" />
        </section>
      )}
      <FeedbackSection tenant={tenant} runId={runId} traceId={r.trace_id} />
      {(loaded.large.events || (r.events && r.events.length > 0)) && (
        <section aria-labelledby="events-title">
          <h3 id="events-title">Events</h3>
          <Field loaded={loaded} field="events" label="Events" />
        </section>
      )}
    </article>
  );
}

/** A field of the run: from the worker when it stayed there (large), else from the page. */
function Field({ loaded, field, label }: { loaded: LoadedRun; field: keyof RunResponse; label: string }) {
  const source = useMemo(() => (loaded.large[field] ? workerSource(loaded, field) : null), [loaded, field]);
  if (source) {
    return (
      <>
        <p className="muted">{Math.round(loaded.large[field].chars / 1024).toLocaleString('en-US')} KB, read level by level</p>
        <LazyJson source={source} label={label} />
      </>
    );
  }
  return <JsonView value={loaded.run[field]} label={label} />;
}

/** Time to first token: the run's first_token_time, else its first `new_token` event. */
function firstTokenMs(r: RunResponse): number | null {
  const start = ms(r.start_time);
  if (start === null) return null;
  const fromEvents = (r.events ?? []).find((e) => (e as { name?: unknown }).name === 'new_token') as { time?: string } | undefined;
  const first = ms(r.first_token_time) ?? ms(fromEvents?.time);
  return first === null ? null : Math.max(0, first - start);
}

/** The error's message on its first line, its stack (the rest) below, folded when long. */
function ErrorText({ error }: { error: string }) {
  const nl = error.indexOf('\n');
  const message = nl < 0 ? error : error.slice(0, nl);
  const stack = nl < 0 ? '' : error.slice(nl + 1);
  return (
    <div className="error-box">
      <p className="error-message">{message}</p>
      {stack && (
        <details open={stack.split('\n').length <= 12}>
          <summary>Stack ({stack.split('\n').length} lines)</summary>
          <pre data-testid="error-stack" tabIndex={0}>{stack}</pre>
        </details>
      )}
    </div>
  );
}

const INLINE_IMAGE = /^image\/(png|jpeg|gif|webp|avif)$/i;

/** The run's attachments through their signed URLs (same origin): images shown, every file downloadable. */
function Attachments({ run }: { run: RunResponse }) {
  const files = Object.entries(run.s3_urls ?? {});
  if (!files.length) return null;
  return (
    <section aria-labelledby="attachments-title">
      <h3 id="attachments-title">Attachments</h3>
      <ul className="attachments">
        {files.map(([key, a]) => {
          const name = key.replace(/^attachment\./, '');
          return (
            <li key={key}>
              {a.presigned_url ? (
                <>
                  <a href={a.presigned_url} download={name}>{name}</a> <span className="muted">{a.mime_type}</span>
                  {INLINE_IMAGE.test(a.mime_type) && <img src={a.presigned_url} alt={`Attachment ${name}`} loading="lazy" />}
                </>
              ) : (
                <span>{name} <span className="muted">(no download URL)</span></span>
              )}
            </li>
          );
        })}
      </ul>
    </section>
  );
}

/** The dataset example the run came from, linked in its dataset. */
function ExampleLink({ tenant, exampleId }: { tenant: string; exampleId: string }) {
  const example = useQuery({ queryKey: ['example', tenant, exampleId], queryFn: ({ signal }) => api<Example>(`/examples/${exampleId}`, { tenant, signal }), staleTime: 60_000 });
  if (!example.data) return <span>Example <code>{exampleId}</code></span>;
  return <Link to={`/o/${tenant}/datasets/${example.data.dataset_id}?example=${exampleId}`}>Dataset example</Link>;
}

type FeedbackFields = Pick<FeedbackCreate, 'key' | 'score' | 'comment'>;
const feedbackFields = (form: HTMLFormElement): FeedbackFields => {
  const data = new FormData(form);
  const score = String(data.get('score') ?? '').trim();
  const comment = String(data.get('comment') ?? '').trim();
  return { key: String(data.get('key') ?? '').trim(), score: score === '' ? null : Number(score), comment: comment || null };
};

/**
 * The run's feedback: list, add, edit, delete. Writes go through the bus, so after each the list is read
 * again until it shows the change.
 */
function FeedbackSection({ tenant, runId, traceId }: { tenant: string; runId: string; traceId?: string }) {
  const [awaited, setAwaited] = useState<((list: Feedback[]) => boolean) | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const feedback = useQuery({
    queryKey: ['feedback', tenant, runId],
    queryFn: async ({ signal }) => {
      const list = await api<Feedback[]>(`/feedback?run=${runId}`, { tenant, signal });
      if (awaited && awaited(list)) setAwaited(null);
      return list;
    },
    refetchInterval: awaited ? 500 : false,
  });
  const wait = (done: (list: Feedback[]) => boolean) => setAwaited(() => done);
  const add = useMutation({
    mutationFn: (body: FeedbackFields) => api<Feedback>('/feedback', { tenant, json: { ...body, run_id: runId, trace_id: traceId } }),
    onSuccess: (created) => wait((list) => list.some((f) => f.id === created.id)),
  });
  const edit = useMutation({
    mutationFn: ({ id, body }: { id: string; body: Pick<FeedbackUpdate, 'score' | 'comment'> }) => api<Feedback>(`/feedback/${id}`, { tenant, method: 'PATCH', json: body }),
    onSuccess: (_, { id, body }) => {
      setEditing(null);
      wait((list) => list.some((f) => f.id === id && (f.comment ?? null) === (body.comment ?? null) && (f.score ?? null) === (body.score ?? null)));
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) => api(`/feedback/${id}`, { tenant, method: 'DELETE' }),
    onSuccess: (_, id) => wait((list) => !list.some((f) => f.id === id)),
  });
  const onAdd = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    add.mutate(feedbackFields(form), { onSuccess: () => form.reset() });
  };
  const onEdit = (id: string) => (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const { score, comment } = feedbackFields(e.currentTarget);
    edit.mutate({ id, body: { score, comment } });
  };
  const failed = add.error ?? edit.error ?? remove.error;
  return (
    <section aria-labelledby="feedback-title">
      <h3 id="feedback-title">Feedback</h3>
      {feedback.isError && <p role="alert" className="error">{feedback.error.message}</p>}
      {feedback.data && feedback.data.length === 0 && <p className="muted">No feedback.</p>}
      {feedback.data && feedback.data.length > 0 && (
        <table className="grid" aria-label="Feedback">
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Score</th>
              <th scope="col">Value</th>
              <th scope="col">Comment</th>
              <th scope="col"><span className="visually-hidden">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {feedback.data.map((f) =>
              editing === f.id ? (
                <tr key={f.id} className="feedback">
                  <td colSpan={5}>
                    <form className="toolbar" aria-label={`Edit feedback ${f.key}`} onSubmit={onEdit(f.id)}>
                      <input type="hidden" name="key" value={f.key} />
                      <label>
                        Score <input name="score" type="number" step="any" inputMode="decimal" defaultValue={f.score ?? ''} />
                      </label>
                      <label className="grow">
                        Comment <input name="comment" maxLength={2000} defaultValue={f.comment ?? ''} />
                      </label>
                      <button type="submit" disabled={edit.isPending}>Save</button>
                      <button type="button" onClick={() => setEditing(null)}>Cancel</button>
                    </form>
                  </td>
                </tr>
              ) : (
                <tr key={f.id} className="feedback">
                  <td>{f.key}</td>
                  <td>{f.score === null || f.score === undefined ? '—' : String(f.score)}</td>
                  <td>{f.value === null || f.value === undefined ? '—' : JSON.stringify(f.value)}</td>
                  <td>{f.comment ?? ''}</td>
                  <td className="row-actions">
                    <button type="button" aria-label={`Edit feedback ${f.key}`} onClick={() => setEditing(f.id)}>Edit</button>
                    <button
                      type="button"
                      aria-label={`Delete feedback ${f.key}`}
                      disabled={remove.isPending}
                      onClick={() => {
                        if (window.confirm(`Delete the feedback "${f.key}"?`)) remove.mutate(f.id);
                      }}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ),
            )}
          </tbody>
        </table>
      )}
      <form className="toolbar feedback-form" aria-label="Add feedback" onSubmit={onAdd}>
        <label>
          Key <input name="key" required maxLength={200} defaultValue="correctness" />
        </label>
        <label>
          Score <input name="score" type="number" step="any" inputMode="decimal" />
        </label>
        <label className="grow">
          Comment <input name="comment" maxLength={2000} />
        </label>
        <button type="submit" disabled={add.isPending}>Add feedback</button>
      </form>
      {failed && <p role="alert" className="error">{failed.message}</p>}
    </section>
  );
}
