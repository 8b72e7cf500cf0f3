import { useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { Project, RunQuery, RunRecord } from '@th/contracts';
import { ApiError, api } from '../api';
import { FilterEditor } from '../components/filter-editor';
import type { KnownValues } from '../components/filter-language';
import { SavedFilters } from '../components/saved-filters';
import { TimeRangePicker, rangeOf, rangeStart } from '../components/time-range';
import { fmtCost, fmtInt, fmtLatency, fmtTime } from '../format';
import { Link, navigate, paths, setSearchParam, useLocation } from '../router';

type RunRow = Partial<RunRecord>;
type RunField = NonNullable<RunQuery['select']>[number];
interface RunPage {
  runs: RunRow[];
  cursors: { next: string | null };
}

const PAGE = 100;
const LIVE_MS = 3_000;
const ROW_PX = 36;
/** Runs read once to learn the project's names, tags and metadata keys, for completion and the column picker. */
const SAMPLE = 200;

interface Column {
  label: string;
  /** The fields read for it, nothing more (inputs and outputs stay on the server). */
  select: RunField[];
  width: string;
  num?: boolean;
  cell: (r: RunRow) => ReactNode;
}

const metadataOf = (r: RunRow): Record<string, unknown> => {
  const m = (r.extra as { metadata?: unknown } | null | undefined)?.metadata;
  return m && typeof m === 'object' ? (m as Record<string, unknown>) : {};
};
const text = (v: unknown): string => (v === null || v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v));

const BASE_COLUMNS: Record<string, Column> = {
  name: { label: 'Name', select: ['name'], width: 'minmax(180px, 3fr)', cell: () => null },
  run_type: { label: 'Type', select: ['run_type'], width: '1fr', cell: (r) => r.run_type },
  status: { label: 'Status', select: ['status'], width: '1fr', cell: (r) => <Status status={r.status} /> },
  start_time: { label: 'Start', select: ['start_time'], width: '2fr', cell: (r) => fmtTime(r.start_time) },
  latency: { label: 'Latency', select: ['latency'], width: '1fr', num: true, cell: (r) => fmtLatency(r.latency) },
  total_tokens: { label: 'Tokens', select: ['total_tokens'], width: '1fr', num: true, cell: (r) => fmtInt(r.total_tokens) },
  prompt_tokens: { label: 'Prompt tokens', select: ['prompt_tokens'], width: '1fr', num: true, cell: (r) => fmtInt(r.prompt_tokens) },
  completion_tokens: { label: 'Completion tokens', select: ['completion_tokens'], width: '1fr', num: true, cell: (r) => fmtInt(r.completion_tokens) },
  total_cost: { label: 'Cost', select: ['total_cost'], width: '1fr', num: true, cell: (r) => fmtCost(r.total_cost) },
  prompt_cost: { label: 'Prompt cost', select: ['prompt_cost'], width: '1fr', num: true, cell: (r) => fmtCost(r.prompt_cost) },
  completion_cost: { label: 'Completion cost', select: ['completion_cost'], width: '1fr', num: true, cell: (r) => fmtCost(r.completion_cost) },
  error: { label: 'Error', select: ['error'], width: '2fr', cell: (r) => r.error ?? '' },
  tags: { label: 'Tags', select: ['tags'], width: '2fr', cell: (r) => (r.tags ?? []).join(', ') },
};
const DEFAULT_COLUMNS = ['name', 'run_type', 'status', 'start_time', 'latency', 'total_tokens', 'total_cost'];

/** A column by its id in the URL: a base column, `metadata.<key>` or `feedback.<key>`. */
function columnFor(id: string): Column | null {
  if (id in BASE_COLUMNS) return BASE_COLUMNS[id];
  if (id.startsWith('metadata.')) {
    const key = id.slice('metadata.'.length);
    return { label: key, select: ['extra'], width: '1fr', cell: (r) => text(metadataOf(r)[key]) };
  }
  if (id.startsWith('feedback.')) {
    const key = id.slice('feedback.'.length);
    return {
      label: key,
      select: ['feedback_stats'],
      width: '1fr',
      num: true,
      cell: (r) => {
        const s = (r.feedback_stats as Record<string, { avg?: number | null; n?: number }> | null | undefined)?.[key];
        return s?.avg === null || s?.avg === undefined ? '—' : s.avg.toFixed(2);
      },
    };
  }
  return null;
}

/** The server's parse error of the filter, with its position (the 422's ctx). */
function filterError(err: Error | null): { position: number; message: string } | null {
  if (!(err instanceof ApiError) || !Array.isArray(err.detail)) return null;
  const item = (err.detail as { loc?: unknown[]; msg?: string; ctx?: { position?: unknown } }[]).find((d) => d.loc?.[1] === 'filter');
  if (!item) return null;
  return { position: typeof item.ctx?.position === 'number' ? item.ctx.position : 0, message: item.msg ?? 'Invalid filter' };
}

export function RunsView({ tenant, project }: { tenant: string; project: string }) {
  const location = useLocation();
  const params = location.searchParams;
  const filter = params.get('filter') ?? '';
  const allRuns = params.get('all') === 'true';
  const live = params.get('live') === 'true';
  const order = params.get('order') === 'asc' ? 'asc' : 'desc';
  const range = rangeOf(params.get('range'), 'all');
  const columnIds = (params.get('cols')?.split(',').filter((c) => columnFor(c) !== null) ?? DEFAULT_COLUMNS).filter((c, i, all) => all.indexOf(c) === i);
  const columns = columnIds.map((id) => [id, columnFor(id) as Column] as const);
  const select = [...new Set<RunField>(['id', 'name', 'trace_id', ...columns.flatMap(([, c]) => c.select)])];
  const startTime = rangeStart(range);

  const info = useQuery({ queryKey: ['project', tenant, project], queryFn: ({ signal }) => api<Project>(`/sessions/${project}`, { tenant, signal }) });

  const runs = useInfiniteQuery({
    queryKey: ['runs', tenant, project, filter, allRuns, order, startTime, select.join(',')],
    initialPageParam: null as string | null,
    queryFn: ({ pageParam, signal }) =>
      api<RunPage>('/runs/query', {
        tenant,
        signal,
        json: { session: [project], is_root: allRuns ? null : true, filter: filter || null, start_time: startTime, order, limit: PAGE, cursor: pageParam, select },
      }),
    getNextPageParam: (last) => last.cursors.next,
    // Live: the loaded pages are read again, so new runs appear at the top without a reload.
    refetchInterval: live ? LIVE_MS : false,
    retry: (n, err) => !(err instanceof ApiError && err.status === 422) && n < 2,
  });
  // Completion's known values cost a read over the whole project (its feedback stats) and a sample:
  // they are fetched once the first page is there, so they never compete with it.
  const firstPageIn = runs.isSuccess || runs.isError;
  const stats = useQuery({
    queryKey: ['project', tenant, project, 'stats'],
    queryFn: ({ signal }) => api<Project>(`/sessions/${project}?include_stats=true`, { tenant, signal }),
    enabled: firstPageIn,
  });
  const sample = useQuery({
    queryKey: ['runs-sample', tenant, project],
    queryFn: ({ signal }) => api<RunPage>('/runs/query', { tenant, signal, json: { session: [project], limit: SAMPLE, select: ['name', 'tags', 'extra'] } }),
    staleTime: 60_000,
    enabled: firstPageIn,
  });
  const known: KnownValues = useMemo(() => {
    const rows = sample.data?.runs ?? [];
    const uniq = (xs: string[]) => [...new Set(xs)].sort();
    return {
      names: uniq(rows.map((r) => r.name ?? '').filter(Boolean)),
      tags: uniq(rows.flatMap((r) => r.tags ?? [])),
      metadataKeys: uniq(rows.flatMap((r) => Object.keys(metadataOf(r)))),
      feedbackKeys: uniq(Object.keys((stats.data?.feedback_stats as Record<string, unknown> | null | undefined) ?? {})),
    };
  }, [sample.data, stats.data]);
  const rows = runs.data?.pages.flatMap((p) => p.runs) ?? [];
  const parseError = filterError(runs.error);

  const scroller = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({ count: rows.length, getScrollElement: () => scroller.current, estimateSize: () => ROW_PX, overscan: 12 });
  const items = virtual.getVirtualItems();
  const lastIndex = items.length ? items[items.length - 1].index : -1;
  useEffect(() => {
    if (lastIndex >= rows.length - 20 && runs.hasNextPage && !runs.isFetchingNextPage) void runs.fetchNextPage();
  }, [lastIndex, rows.length, runs]);
  const grid = { gridTemplateColumns: columns.map(([, c]) => c.width).join(' ') };

  return (
    <section aria-labelledby="runs-title" className="runs">
      <p className="crumbs">
        <Link to={paths.projects(tenant)}>Projects</Link> /
      </p>
      <h1 id="runs-title">{info.data?.name ?? 'Project'}</h1>
      <nav className="tabs" aria-label="Project views">
        <Link to={paths.runs(tenant, project)} aria-current="page">Runs</Link>
        <Link to={paths.monitor(tenant, project)}>Monitoring</Link>
      </nav>
      {info.data && <ProjectActions tenant={tenant} project={info.data} />}
      <FilterEditor value={filter} known={known} error={parseError} onSubmit={(t) => setSearchParam('filter', t.trim())} />
      <SavedFilters tenant={tenant} project={project} filter={filter} />
      <div className="toolbar">
        <TimeRangePicker value={range} fallback="all" />
        <label>
          Order{' '}
          <select value={order} onChange={(e) => setSearchParam('order', e.target.value === 'asc' ? 'asc' : null)}>
            <option value="desc">Newest first</option>
            <option value="asc">Oldest first</option>
          </select>
        </label>
        <ColumnPicker selected={columnIds} known={known} />
        <label className="check">
          <input type="checkbox" checked={allRuns} onChange={(e) => setSearchParam('all', e.target.checked ? 'true' : null)} /> All runs (not only roots)
        </label>
        <label className="check">
          <input type="checkbox" checked={live} onChange={(e) => setSearchParam('live', e.target.checked ? 'true' : null)} /> Live
        </label>
      </div>
      {runs.isError && <p id="filter-error" role="alert" className="error">{runs.error.message}</p>}
      <div className="vtable" role="table" aria-label="Runs" aria-rowcount={rows.length + 1}>
        <div role="rowgroup">
          <div role="row" className="vrow head" style={grid}>
            {columns.map(([id, c]) => (
              <span key={id} role="columnheader" className={c.num ? 'num' : undefined} data-col={id}>
                {c.label}
              </span>
            ))}
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
                  style={{ ...grid, position: 'absolute', top: 0, left: 0, right: 0, height: ROW_PX, transform: `translateY(${item.start}px)` }}
                >
                  {columns.map(([id, c]) => (
                    <span key={id} role="cell" className={c.num ? 'num' : undefined} data-col={id}>
                      {id === 'name' ? <Link to={to}>{r.name}</Link> : c.cell(r)}
                    </span>
                  ))}
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

/** Adds or removes columns (the URL's `cols`): the base fields, metadata keys seen in the project, its feedback keys. */
function ColumnPicker({ selected, known }: { selected: string[]; known: KnownValues }) {
  const toggle = (id: string, on: boolean) => {
    const next = on ? [...selected, id] : selected.filter((c) => c !== id);
    const same = next.length === DEFAULT_COLUMNS.length && next.every((c, i) => c === DEFAULT_COLUMNS[i]);
    setSearchParam('cols', same ? null : next.join(','));
  };
  const groups: [string, [string, string][]][] = [
    ['Fields', Object.entries(BASE_COLUMNS).map(([id, c]) => [id, c.label])],
    ['Metadata', known.metadataKeys.map((k) => [`metadata.${k}`, k])],
    ['Feedback', known.feedbackKeys.map((k) => [`feedback.${k}`, k])],
  ];
  return (
    <details className="picker">
      <summary>Columns</summary>
      <div className="picker-body">
        {groups.map(([title, entries]) => (
          <fieldset key={title}>
            <legend>{title}</legend>
            {entries.length === 0 && <span className="muted">none seen</span>}
            {entries.map(([id, label]) => (
              <label key={id} className="check">
                <input type="checkbox" name={`col-${id}`} checked={selected.includes(id)} disabled={id === 'name'} onChange={(e) => toggle(id, e.target.checked)} /> {label}
              </label>
            ))}
          </fieldset>
        ))}
      </div>
    </details>
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
