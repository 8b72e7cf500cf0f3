import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { Project, ProjectCreate } from '@th/contracts';
import { api } from '../api';
import { fmtCost, fmtInt, fmtLatency, fmtPct, fmtTime } from '../format';
import { Link, navigate, paths, setSearchParam, useLocation } from '../router';
import { TimeRangePicker, rangeOf, rangeStart } from '../components/time-range';

type SortKey = 'name' | 'run_count' | 'error_rate' | 'latency_p50' | 'total_tokens' | 'last_run_start_time';

export function ProjectsView({ tenant }: { tenant: string }) {
  const location = useLocation();
  const search = location.searchParams.get('q') ?? '';
  const sort = (location.searchParams.get('sort') ?? 'last_run_start_time') as SortKey;
  const range = rangeOf(location.searchParams.get('range'), 'all');
  const statsStart = rangeStart(range);
  const [text, setText] = useState(search);
  const projects = useQuery({
    queryKey: ['projects', tenant, search, statsStart],
    queryFn: ({ signal }) => {
      const q = new URLSearchParams({ include_stats: 'true', limit: '1000' });
      if (search) q.set('name_contains', search);
      if (statsStart) q.set('stats_start_time', statsStart);
      return api<Project[]>(`/sessions?${q}`, { tenant, signal });
    },
  });
  const rows = [...(projects.data ?? [])].sort((a, b) => compare(a, b, sort));
  const qc = useQueryClient();
  const create = useMutation({
    mutationFn: (body: Pick<ProjectCreate, 'name'>) => api<Project>('/sessions', { tenant, json: body }),
    onSuccess: async (created) => {
      await qc.invalidateQueries({ queryKey: ['projects', tenant] });
      navigate(paths.runs(tenant, created.id));
    },
  });
  return (
    <section aria-labelledby="projects-title">
      <h1 id="projects-title">Projects</h1>
      <form
        role="search"
        className="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          setSearchParam('q', text);
        }}
      >
        <label>
          Search projects <input type="search" value={text} onChange={(e) => setText(e.target.value)} />
        </label>
        <label>
          Sort by{' '}
          <select value={sort} onChange={(e) => setSearchParam('sort', e.target.value)}>
            <option value="last_run_start_time">Last run</option>
            <option value="name">Name</option>
            <option value="run_count">Runs</option>
            <option value="error_rate">Error rate</option>
            <option value="latency_p50">P50 latency</option>
            <option value="total_tokens">Tokens</option>
          </select>
        </label>
        <TimeRangePicker value={range} fallback="all" />
      </form>
      <form
        className="toolbar"
        aria-label="New project"
        onSubmit={(e) => {
          e.preventDefault();
          const name = String(new FormData(e.currentTarget).get('name') ?? '').trim();
          if (name) create.mutate({ name });
        }}
      >
        <label>
          New project <input name="name" maxLength={1024} required />
        </label>
        <button type="submit" disabled={create.isPending}>Create</button>
      </form>
      {create.isError && <p role="alert" className="error">{create.error.message}</p>}
      {projects.isPending && <p aria-busy="true">Loading…</p>}
      {projects.isError && <p role="alert" className="error">{projects.error.message}</p>}
      {projects.data && projects.data.length === 0 && !search && <FirstTrace />}
      {projects.data && projects.data.length === 0 && search && <p>No project matches “{search}”.</p>}
      {rows.length > 0 && (
        <table className="grid">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col" className="num">Runs</th>
              <th scope="col" className="num">Error rate</th>
              <th scope="col" className="num">P50</th>
              <th scope="col" className="num">P99</th>
              <th scope="col" className="num">Tokens</th>
              <th scope="col" className="num">Cost</th>
              <th scope="col">Last run</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((p) => (
              <tr key={p.id}>
                <td>
                  <Link to={paths.runs(tenant, p.id)}>{p.name}</Link>
                </td>
                <td className="num" data-col="run_count">{fmtInt(p.run_count)}</td>
                <td className="num">{fmtPct(p.error_rate)}</td>
                <td className="num">{fmtLatency(p.latency_p50)}</td>
                <td className="num">{fmtLatency(p.latency_p99)}</td>
                <td className="num">{fmtInt(p.total_tokens)}</td>
                <td className="num">{fmtCost(p.total_cost)}</td>
                <td>{fmtTime(p.last_run_start_time)}</td>

              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function compare(a: Project, b: Project, key: SortKey): number {
  if (key === 'name') return a.name.localeCompare(b.name);
  const av = a[key] ?? null;
  const bv = b[key] ?? null;
  if (av === bv) return a.name.localeCompare(b.name);
  if (av === null) return 1;
  if (bv === null) return -1;
  return av < bv ? 1 : -1; // largest (or latest) first
}

/** The empty state: how to send a first trace to this service. */
function FirstTrace() {
  const origin = window.location.origin;
  return (
    <div className="empty">
      <h2>Send your first trace</h2>
      <p>Point the LangSmith SDK (Python or JavaScript) at this service, then run your app:</p>
      <pre>
        <code>{`export LANGSMITH_TRACING=true
export LANGSMITH_ENDPOINT=${origin}/api/v1
export LANGSMITH_API_KEY=<your API key>
export LANGSMITH_PROJECT=my-first-project`}</code>
      </pre>
    </div>
  );
}
