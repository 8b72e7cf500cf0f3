import { useEffect, useRef, useState } from 'react';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { Project, RunQuery, RunRecord } from '@th/contracts';
import { api } from '../api';
import { fmtCost, fmtInt, fmtLatency, fmtTime } from '../format';
import { Link, navigate, paths, setSearchParam, useLocation } from '../router';

type RunRow = Partial<RunRecord>;
interface RunPage {
  runs: RunRow[];
  cursors: { next: string | null };
}

const PAGE = 100;
const LIVE_MS = 3_000;
const ROW_PX = 36;
/** The table's columns: the fields read for them, nothing more (inputs and outputs stay on the server). */
const SELECT: NonNullable<RunQuery['select']> = [
  'id', 'name', 'run_type', 'status', 'start_time', 'latency', 'total_tokens', 'total_cost', 'error', 'tags', 'trace_id',
];

export function RunsView({ tenant, project }: { tenant: string; project: string }) {
  const location = useLocation();
  const filter = location.searchParams.get('filter') ?? '';
  const allRuns = location.searchParams.get('all') === 'true';
  const live = location.searchParams.get('live') === 'true';
  const [text, setText] = useState(filter);
  useEffect(() => setText(filter), [filter]);
  const info = useQuery({ queryKey: ['project', tenant, project], queryFn: ({ signal }) => api<Project>(`/sessions/${project}`, { tenant, signal }) });
  const runs = useInfiniteQuery({
    queryKey: ['runs', tenant, project, filter, allRuns],
    initialPageParam: null as string | null,
    queryFn: ({ pageParam, signal }) =>
      api<RunPage>('/runs/query', {
        tenant,
        signal,
        json: { session: [project], is_root: allRuns ? null : true, filter: filter || null, limit: PAGE, cursor: pageParam, select: SELECT },
      }),
    getNextPageParam: (last) => last.cursors.next,
    // Live: the loaded pages are read again, so new runs appear at the top without a reload.
    refetchInterval: live ? LIVE_MS : false,
  });
  const rows = runs.data?.pages.flatMap((p) => p.runs) ?? [];

  const scroller = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({ count: rows.length, getScrollElement: () => scroller.current, estimateSize: () => ROW_PX, overscan: 12 });
  const items = virtual.getVirtualItems();
  const lastIndex = items.length ? items[items.length - 1].index : -1;
  useEffect(() => {
    if (lastIndex >= rows.length - 20 && runs.hasNextPage && !runs.isFetchingNextPage) void runs.fetchNextPage();
  }, [lastIndex, rows.length, runs]);

  return (
    <section aria-labelledby="runs-title" className="runs">
      <p className="crumbs">
        <Link to={paths.projects(tenant)}>Projects</Link> /
      </p>
      <h1 id="runs-title">{info.data?.name ?? 'Project'}</h1>
      {info.data && <ProjectActions tenant={tenant} project={info.data} />}
      <form
        className="toolbar"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setSearchParam('filter', text.trim());
        }}
      >
        <label className="grow">
          Filter
          <input
            name="filter"
            className="mono"
            placeholder={'and(eq(run_type, "llm"), gt(latency, 1))'}
            value={text}
            onChange={(e) => setText(e.target.value)}
            aria-invalid={runs.isError}
            aria-describedby={runs.isError ? 'filter-error' : undefined}
          />
        </label>
        <button type="submit">Apply</button>
        <label className="check">
          <input type="checkbox" checked={allRuns} onChange={(e) => setSearchParam('all', e.target.checked ? 'true' : null)} /> All runs (not only roots)
        </label>
        <label className="check">
          <input type="checkbox" checked={live} onChange={(e) => setSearchParam('live', e.target.checked ? 'true' : null)} /> Live
        </label>
      </form>
      {runs.isError && <p id="filter-error" role="alert" className="error">{runs.error.message}</p>}
      <div className="vtable" role="table" aria-label="Runs" aria-rowcount={rows.length + 1}>
        <div role="rowgroup">
          <div role="row" className="vrow head">
            <span role="columnheader">Name</span>
            <span role="columnheader">Type</span>
            <span role="columnheader">Status</span>
            <span role="columnheader">Start</span>
            <span role="columnheader" className="num">Latency</span>
            <span role="columnheader" className="num">Tokens</span>
            <span role="columnheader" className="num">Cost</span>
          </div>
        </div>
        <div ref={scroller} className="vbody" role="rowgroup" tabIndex={0} aria-label="Runs, scrollable">
          <div style={{ height: virtual.getTotalSize(), position: 'relative' }}>
            {items.map((item) => {
              const r = rows[item.index];
              const to = paths.trace(tenant, project, r.id ?? '');
              return (
                <div
                  key={r.id}
                  role="row"
                  aria-rowindex={item.index + 2}
                  className="vrow"
                  style={{ position: 'absolute', top: 0, left: 0, right: 0, height: ROW_PX, transform: `translateY(${item.start}px)` }}
                >
                  <span role="cell">
                    <Link to={to}>{r.name}</Link>
                  </span>
                  <span role="cell">{r.run_type}</span>
                  <span role="cell">
                    <Status status={r.status} />
                  </span>
                  <span role="cell">{fmtTime(r.start_time)}</span>
                  <span role="cell" className="num">{fmtLatency(r.latency)}</span>
                  <span role="cell" className="num">{fmtInt(r.total_tokens)}</span>
                  <span role="cell" className="num">{fmtCost(r.total_cost)}</span>
                </div>
              );
            })}
          </div>
        </div>
      </div>
      <p className="muted" aria-live="polite">
        {runs.isPending ? 'Loading…' : `${rows.length} run${rows.length === 1 ? '' : 's'}${runs.hasNextPage ? ' loaded, more on scroll' : ''}`}
      </p>
      {rows.length === 0 && runs.isSuccess && !filter && (
        <p>
          No runs yet. <button type="button" onClick={() => navigate(paths.projects(tenant))}>Back to projects</button>
        </p>
      )}
    </section>
  );
}

export function Status({ status }: { status: string | undefined }) {
  return <span className={`status ${status ?? ''}`}>{status ?? '—'}</span>;
}

/** Rename and delete the project (writes through the session cookie, with the CSRF header). */
function ProjectActions({ tenant, project }: { tenant: string; project: Project }) {
  const qc = useQueryClient();
  const [renaming, setRenaming] = useState(false);
  const rename = useMutation({
    mutationFn: (name: string) => api<Project>(`/sessions/${project.id}`, { tenant, method: 'PATCH', json: { name } }),
    onSuccess: async () => {
      setRenaming(false);
      await qc.invalidateQueries({ queryKey: ['project', tenant, project.id] });
      await qc.invalidateQueries({ queryKey: ['projects', tenant] });
    },
  });
  const remove = useMutation({
    mutationFn: () => api(`/sessions/${project.id}`, { tenant, method: 'DELETE' }),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ['projects', tenant] });
      navigate(paths.projects(tenant));
    },
  });
  const error = rename.error ?? remove.error;
  return (
    <div className="toolbar">
      {renaming ? (
        <form
          className="toolbar"
          aria-label="Rename project"
          onSubmit={(e) => {
            e.preventDefault();
            const name = String(new FormData(e.currentTarget).get('name') ?? '').trim();
            if (name) rename.mutate(name);
          }}
        >
          <label>
            New name <input name="name" defaultValue={project.name} maxLength={1024} required />
          </label>
          <button type="submit" disabled={rename.isPending}>Save</button>
          <button type="button" onClick={() => setRenaming(false)}>Cancel</button>
        </form>
      ) : (
        <button type="button" onClick={() => setRenaming(true)}>Rename</button>
      )}
      <button
        type="button"
        disabled={remove.isPending}
        onClick={() => {
          if (window.confirm(`Delete the project “${project.name}” and its runs?`)) remove.mutate();
        }}
      >
        Delete project
      </button>
      {error && <p role="alert" className="error">{error.message}</p>}
    </div>
  );
}
