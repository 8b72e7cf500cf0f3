import { useQuery } from '@tanstack/react-query';
import type { Project, ProjectDashboard } from '@th/contracts';
import { api } from '../api';
import { TimeChart } from '../components/chart';
import { RANGES, TimeRangePicker, rangeOf } from '../components/time-range';
import { fmtCost, fmtInt, fmtLatency, fmtPct } from '../format';
import { Link, paths, useLocation } from '../router';

const FORMATS: Record<string, (v: number | null) => string> = {
  run_count: fmtInt,
  error_rate: fmtPct,
  latency: fmtLatency,
  tokens: fmtInt,
  cost: fmtCost,
  feedback: (v) => (v === null ? '—' : v.toFixed(2)),
};

/** A project's monitoring charts over the chosen range (POST /sessions/{id}/dashboard). */
export function MonitoringView({ tenant, project }: { tenant: string; project: string }) {
  const location = useLocation();
  const range = rangeOf(location.searchParams.get('range'), '7d');
  const spec = RANGES[range === 'all' ? '30d' : range];
  const info = useQuery({ queryKey: ['project', tenant, project], queryFn: ({ signal }) => api<Project>(`/sessions/${project}`, { tenant, signal }) });
  const dashboard = useQuery({
    queryKey: ['dashboard', tenant, project, range],
    queryFn: ({ signal }) => {
      const end = Math.ceil(Date.now() / 60_000) * 60_000;
      return api<ProjectDashboard>(`/sessions/${project}/dashboard`, {
        tenant,
        signal,
        json: { start_time: new Date(end - (spec.ms ?? 0)).toISOString(), end_time: new Date(end).toISOString(), stride: spec.stride, timezone: Intl.DateTimeFormat().resolvedOptions().timeZone },
      });
    },
  });
  return (
    <section aria-labelledby="monitor-title" className="monitoring">
      <p className="crumbs">
        <Link to={paths.projects(tenant)}>Projects</Link> / <Link to={paths.runs(tenant, project)}>{info.data?.name ?? 'Project'}</Link> /
      </p>
      <h1 id="monitor-title">Monitoring</h1>
      <div className="toolbar">
        <TimeRangePicker value={range} fallback="7d" allowAll={false} />
      </div>
      {dashboard.isPending && <p aria-busy="true">Loading…</p>}
      {dashboard.isError && <p role="alert" className="error">{dashboard.error.message}</p>}
      {dashboard.data && (
        <div className="charts">
          {dashboard.data.charts.map((c) => (
            <TimeChart key={c.id} chart={c} format={FORMATS[c.id] ?? fmtInt} />
          ))}
        </div>
      )}
    </section>
  );
}
