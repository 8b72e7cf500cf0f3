import { useEffect, useMemo, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { useInfiniteQuery, useMutation, useQuery } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { Feedback, FeedbackCreate, RunQuery, RunRecord } from '@th/contracts';
import { api } from '../api';
import { Messages, chatOf } from '../components/messages';
import { JsonView } from '../components/json-view';
import { fmtCost, fmtInt, fmtLatency, fmtTime } from '../format';
import { Link, paths, setSearchParam, useLocation } from '../router';
import { Status } from './runs';

type TreeRun = Pick<RunRecord, 'id' | 'name' | 'run_type' | 'status' | 'dotted_order' | 'latency' | 'total_tokens' | 'prompt_tokens' | 'completion_tokens' | 'total_cost' | 'parent_run_id' | 'end_time'>;
const TREE_SELECT: NonNullable<RunQuery['select']> = [
  'id', 'name', 'run_type', 'status', 'dotted_order', 'latency', 'total_tokens', 'prompt_tokens', 'completion_tokens', 'total_cost', 'parent_run_id', 'end_time',
];
/** Pages of the trace read for the tree (1,000 runs each). */
const MAX_TREE_PAGES = 20;
const POLL_MS = 2_000;
const NODE_PX = 34;

export function TraceView({ tenant, project, runId, poll }: { tenant: string; project: string; runId: string; poll: boolean }) {
  const location = useLocation();
  const selected = location.searchParams.get('selected') ?? runId;
  const linked = useQuery({ queryKey: ['run', tenant, runId], queryFn: ({ signal }) => api<RunRecord>(`/runs/${runId}`, { tenant, signal }) });
  const traceId = linked.data?.trace_id;
  // Page after page (1,000 runs each): the tree is drawn from the first page on and fills in.
  const tree = useInfiniteQuery({
    queryKey: ['trace', tenant, traceId],
    enabled: !!traceId,
    initialPageParam: null as string | null,
    queryFn: ({ pageParam, signal }) =>
      api<{ runs: TreeRun[]; cursors: { next: string | null } }>('/runs/query', {
        tenant,
        signal,
        json: { trace: traceId, session: [project], limit: 1000, cursor: pageParam, select: TREE_SELECT, order: 'asc' },
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
        <Link to={paths.projects(tenant)}>Projects</Link> / <Link to={paths.runs(tenant, project)}>Runs</Link> /
      </p>
      <h1 id="trace-title">Trace{all[0] ? ` · ${all[0].name}` : ''}</h1>
      {linked.isError && <p role="alert" className="error">{linked.error.message}</p>}
      {poll && all.some((r) => !r.end_time) && <p className="muted" aria-live="polite">Live: refreshing every {POLL_MS / 1000} s until the trace ends.</p>}
      <div className="split">
        <nav aria-label="Run tree" className="tree-pane" ref={pane}>
          {tree.isPending && traceId && <p aria-busy="true">Loading…</p>}
          <label className="tree-search">
            Search in trace <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} />
          </label>
          <p className="muted tree-count" aria-live="polite" data-testid="tree-count">
            {all.length.toLocaleString('en-US')} runs{tree.hasNextPage ? ', loading more…' : ''}
          </p>
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
  const run = useQuery({ queryKey: ['run', tenant, runId], queryFn: ({ signal }) => api<RunRecord>(`/runs/${runId}`, { tenant, signal }) });
  // Feedback is written through the bus: a new one is polled for until the list has it.
  const [awaited, setAwaited] = useState<string | null>(null);
  const feedback = useQuery({
    queryKey: ['feedback', tenant, runId],
    queryFn: async ({ signal }) => {
      const list = await api<Feedback[]>(`/feedback?run=${runId}`, { tenant, signal });
      if (awaited && list.some((f) => f.id === awaited)) setAwaited(null);
      return list;
    },
    refetchInterval: awaited ? 500 : false,
  });
  const addFeedback = useMutation({
    mutationFn: (body: Pick<FeedbackCreate, 'run_id' | 'trace_id' | 'key' | 'score' | 'comment'>) => api<Feedback>('/feedback', { tenant, json: body }),
    onSuccess: (created) => setAwaited(created.id),
  });
  const submitFeedback = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    const score = String(data.get('score') ?? '').trim();
    const comment = String(data.get('comment') ?? '').trim();
    addFeedback.mutate(
      { run_id: runId, trace_id: run.data?.trace_id, key: String(data.get('key') ?? '').trim(), score: score === '' ? null : Number(score), comment: comment || null },
      { onSuccess: () => form.reset() },
    );
  };
  const r = run.data;
  const chat = useMemo(() => (r ? chatOf(r) : null), [r]);
  if (run.isPending) return <p aria-busy="true">Loading…</p>;
  if (run.isError) return <p role="alert" className="error">{run.error.message}</p>;
  if (!r) return null;
  const metadata = (r.extra as { metadata?: Record<string, unknown> } | null)?.metadata;
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
        {r.reference_example_id && <span>Example <code>{r.reference_example_id}</code></span>}
      </p>
      {r.error && (
        <section aria-labelledby="error-title">
          <h3 id="error-title">Error</h3>
          <pre className="error-box">{r.error}</pre>
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
        <JsonView value={r.inputs} label="Inputs" />
      </section>
      <section aria-labelledby="outputs-title">
        <h3 id="outputs-title">Outputs</h3>
        <JsonView value={r.outputs} label="Outputs" />
      </section>
      {r.tags.length > 0 && (
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
              </tr>
            </thead>
            <tbody>
              {feedback.data.map((f) => (
                <tr key={f.id} className="feedback">
                  <td>{f.key}</td>
                  <td>{f.score === null || f.score === undefined ? '—' : String(f.score)}</td>
                  <td>{f.value === null || f.value === undefined ? '—' : JSON.stringify(f.value)}</td>
                  <td>{f.comment ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <form className="toolbar feedback-form" aria-label="Add feedback" onSubmit={submitFeedback}>
          <label>
            Key <input name="key" required maxLength={200} defaultValue="correctness" />
          </label>
          <label>
            Score <input name="score" type="number" step="any" inputMode="decimal" />
          </label>
          <label className="grow">
            Comment <input name="comment" maxLength={2000} />
          </label>
          <button type="submit" disabled={addFeedback.isPending}>Add feedback</button>
        </form>
        {addFeedback.isError && <p role="alert" className="error">{addFeedback.error.message}</p>}
      </section>
      {r.events && r.events.length > 0 && (
        <section aria-labelledby="events-title">
          <h3 id="events-title">Events</h3>
          <JsonView value={r.events} label="Events" />
        </section>
      )}
    </article>
  );
}
