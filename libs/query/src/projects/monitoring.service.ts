import { Injectable } from '@nestjs/common';
import {
  DASHBOARD_DEFAULT_BUCKETS,
  DASHBOARD_DEFAULT_RANGE_MS,
  DASHBOARD_MAX_BUCKETS,
  strideMs,
  type DashboardChart,
  type DashboardMetric,
  type Identity,
  type ProjectDashboard,
  type ProjectDashboardRequest,
  type Timedelta,
} from '@th/contracts';
import { ValidationFailed, notFound } from '@th/platform';
import { ProjectsRepository } from './projects.repository';
import { MonitoringRepository, type BucketRange, type FeedbackBucketRow, type RunBucketRow } from './monitoring.repository';

const MINUTE_MS = 60_000;

/** The zone's offset from UTC at instant `t` (ms), from the platform's time zone data. */
export function tzOffsetMs(timeZone: string, t: number): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(new Date(t));
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  const wall = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return wall - Math.floor(t / 1000) * 1000;
}

const toTimedelta = (ms: number): Timedelta => {
  const minutes = Math.round(ms / MINUTE_MS);
  return { days: Math.floor(minutes / 1440), hours: Math.floor((minutes % 1440) / 60), minutes: minutes % 60 };
};

interface SeriesDef {
  id: string;
  name: string;
  metric: DashboardMetric;
  value: (r: RunBucketRow) => number | null;
}
interface ChartDef {
  id: string;
  title: string;
  chart_type: 'line' | 'bar';
  series: SeriesDef[];
}

const finite = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The prebuilt charts; a bucket without runs answers 0 for counts and sums, null for rates and percentiles. */
const RUN_CHARTS: ChartDef[] = [
  { id: 'run_count', title: 'Trace count', chart_type: 'bar', series: [{ id: 'run_count', name: 'Traces', metric: 'run_count', value: (r) => Number(r.run_count) }] },
  {
    id: 'error_rate',
    title: 'Error rate',
    chart_type: 'line',
    series: [{ id: 'error_rate', name: 'Error rate', metric: 'error_rate', value: (r) => (Number(r.run_count) > 0 ? Number(r.error_count) / Number(r.run_count) : null) }],
  },
  {
    id: 'latency',
    title: 'Latency (s)',
    chart_type: 'line',
    series: [
      { id: 'latency_p50', name: 'P50', metric: 'latency_p50', value: (r) => (Number(r.run_count) > 0 ? finite(r.latency?.[0]) : null) },
      { id: 'latency_p99', name: 'P99', metric: 'latency_p99', value: (r) => (Number(r.run_count) > 0 ? finite(r.latency?.[1]) : null) },
    ],
  },
  {
    id: 'tokens',
    title: 'Tokens',
    chart_type: 'line',
    series: [
      { id: 'total_tokens', name: 'Total', metric: 'total_tokens', value: (r) => Number(r.total_tokens) },
      { id: 'prompt_tokens', name: 'Prompt', metric: 'prompt_tokens', value: (r) => Number(r.prompt_tokens) },
      { id: 'completion_tokens', name: 'Completion', metric: 'completion_tokens', value: (r) => Number(r.completion_tokens) },
    ],
  },
  {
    id: 'cost',
    title: 'Cost (USD)',
    chart_type: 'line',
    series: [
      { id: 'total_cost', name: 'Total', metric: 'total_cost', value: (r) => finite(r.total_cost) },
      { id: 'prompt_cost', name: 'Prompt', metric: 'prompt_cost', value: (r) => finite(r.prompt_cost) },
      { id: 'completion_cost', name: 'Completion', metric: 'completion_cost', value: (r) => finite(r.completion_cost) },
    ],
  },
];
const EMPTY_BUCKET: RunBucketRow = {
  b: 0,
  run_count: 0,
  error_count: 0,
  latency: [],
  total_tokens: 0,
  prompt_tokens: 0,
  completion_tokens: 0,
  total_cost: null,
  prompt_cost: null,
  completion_cost: null,
};

/** A project's monitoring dashboard: its runs and feedback grouped by time bucket. */
@Injectable()
export class MonitoringService {
  constructor(
    private readonly projects: ProjectsRepository,
    private readonly repo: MonitoringRepository,
  ) {}

  async dashboard(identity: Identity, sessionId: string, q: ProjectDashboardRequest): Promise<ProjectDashboard> {
    const project = await this.projects.findById(identity, sessionId);
    if (!project) throw notFound(`Project ${sessionId}`);
    const range = this.range(sessionId, q);
    const buckets = Math.ceil((range.endUs - range.startUs) / range.strideUs);
    const starts = Array.from({ length: buckets }, (_, i) => new Date((range.startUs + i * range.strideUs) / 1000).toISOString());
    const [runRows, feedbackRows] = q.omit_data ? [[], []] : await Promise.all([this.repo.runBuckets(identity, range), this.repo.feedbackBuckets(identity, range)]);
    const byBucket = new Map(runRows.map((r) => [Number(r.b), r]));
    const charts: DashboardChart[] = RUN_CHARTS.map((c, index) => ({
      id: c.id,
      title: c.title,
      chart_type: c.chart_type,
      index,
      series: c.series.map(({ id, name, metric }) => ({ id, name, metric, feedback_key: null })),
      data: q.omit_data ? [] : c.series.flatMap((s) => starts.map((timestamp, i) => ({ series_id: s.id, timestamp, value: s.value(byBucket.get(i) ?? EMPTY_BUCKET) }))),
    }));
    charts.push(this.feedbackChart(feedbackRows, starts, charts.length, q.omit_data));
    return {
      id: `${sessionId}:monitoring`,
      title: project.name,
      description: null,
      index: 0,
      session_id: sessionId,
      charts,
      metadata: {
        start_time: starts[0] ?? new Date(range.startUs / 1000).toISOString(),
        end_time: new Date(range.endUs / 1000).toISOString(),
        stride: toTimedelta(range.strideUs / 1000),
        timezone: q.timezone,
        buckets,
      },
    };
  }

  private feedbackChart(rows: FeedbackBucketRow[], starts: string[], index: number, omitData: boolean): DashboardChart {
    const keys = [...new Set(rows.map((r) => r.key))].sort();
    const byKey = new Map<string, Map<number, number | null>>();
    for (const r of rows) {
      const m = byKey.get(r.key) ?? new Map<number, number | null>();
      m.set(Number(r.b), finite(r.avg_score));
      byKey.set(r.key, m);
    }
    return {
      id: 'feedback',
      title: 'Feedback score (average)',
      chart_type: 'line',
      index,
      series: keys.map((key) => ({ id: `feedback:${key}`, name: key, metric: 'feedback_score_avg' as const, feedback_key: key })),
      data: omitData ? [] : keys.flatMap((key) => starts.map((timestamp, i) => ({ series_id: `feedback:${key}`, timestamp, value: byKey.get(key)?.get(i) ?? null }))),
    };
  }

  /** The range with defaults applied, its start aligned down to the stride in the request's time zone. */
  private range(sessionId: string, q: ProjectDashboardRequest): BucketRange {
    const end = q.end_time ? Date.parse(q.end_time) : Date.now();
    const start = q.start_time ? Date.parse(q.start_time) : end - DASHBOARD_DEFAULT_RANGE_MS;
    if (start >= end) throw new ValidationFailed([{ loc: ['body', 'start_time'], msg: 'start_time should be before end_time', type: 'value_error' }]);
    const stride = q.stride ? strideMs(q.stride) : Math.max(MINUTE_MS, Math.ceil((end - start) / DASHBOARD_DEFAULT_BUCKETS / MINUTE_MS) * MINUTE_MS);
    const offset = tzOffsetMs(q.timezone, start);
    const aligned = Math.floor((start + offset) / stride) * stride - offset;
    const buckets = Math.ceil((end - aligned) / stride);
    if (buckets > DASHBOARD_MAX_BUCKETS) {
      throw new ValidationFailed([
        { loc: ['body', 'stride'], msg: `The range and stride make ${buckets} buckets; at most ${DASHBOARD_MAX_BUCKETS} are allowed`, type: 'value_error' },
      ]);
    }
    return { sessionId, startUs: aligned * 1000, endUs: end * 1000, strideUs: stride * 1000 };
  }
}
