import { z } from 'zod';
import { timestamp, uuid } from './common.schema';

/** At most this many time buckets per dashboard: a chart wider than this is a denial of service, not a chart. */
export const DASHBOARD_MAX_BUCKETS = 1_000;
/** The range a dashboard covers when the request names none (LangSmith's monitoring page opens on the last day). */
export const DASHBOARD_DEFAULT_RANGE_MS = 24 * 3_600_000;
/** Without a stride, the range is cut into about this many buckets (rounded up to whole minutes). */
export const DASHBOARD_DEFAULT_BUCKETS = 60;

const isTimeZone = (tz: string): boolean => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
};

/** LangSmith's TimedeltaInput: a bucket width. */
export const timedeltaSchema = z.object({
  days: z.number().int().min(0).max(366).default(0),
  hours: z.number().int().min(0).max(24 * 366).default(0),
  minutes: z.number().int().min(0).max(60 * 24 * 366).default(0),
});
export type Timedelta = z.infer<typeof timedeltaSchema>;

export const strideMs = (s: Timedelta): number => ((s.days * 24 + s.hours) * 60 + s.minutes) * 60_000;

/**
 * POST /api/v1/sessions/{session_id}/dashboard: the body of LangSmith's prebuilt project dashboard
 * (`client.sessions.dashboard` of the published SDK). `group_by` is not supported: a request with one is a 422.
 */
export const projectDashboardRequestSchema = z
  .object({
    start_time: timestamp.nullish(),
    end_time: timestamp.nullish(),
    stride: timedeltaSchema.nullish(),
    timezone: z.string().max(64).refine(isTimeZone, 'Input should be an IANA time zone name').default('UTC'),
    omit_data: z.boolean().default(false),
    group_by: z.null().optional(),
  })
  .superRefine((q, ctx) => {
    if (q.stride && strideMs(q.stride) === 0) ctx.addIssue({ code: 'custom', path: ['stride'], message: 'The stride should be at least one minute' });
    if (q.start_time && q.end_time && Date.parse(q.start_time) >= Date.parse(q.end_time)) {
      ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'end_time should be after start_time' });
    }
  });
export type ProjectDashboardRequest = z.infer<typeof projectDashboardRequestSchema>;

/** The metrics of the prebuilt dashboard's series (LangSmith's names). */
export const DASHBOARD_METRICS = [
  'run_count',
  'error_rate',
  'latency_p50',
  'latency_p99',
  'total_tokens',
  'prompt_tokens',
  'completion_tokens',
  'total_cost',
  'prompt_cost',
  'completion_cost',
  'feedback_score_avg',
] as const;
export type DashboardMetric = (typeof DASHBOARD_METRICS)[number];

export const dashboardSeriesSchema = z.object({
  id: z.string(),
  name: z.string(),
  metric: z.enum(DASHBOARD_METRICS),
  feedback_key: z.string().nullable().optional(),
});

export const dashboardPointSchema = z.object({
  series_id: z.string(),
  /** The bucket's start (ISO 8601, UTC). */
  timestamp: z.string(),
  value: z.number().nullable(),
  group: z.string().nullable().optional(),
});

export const dashboardChartSchema = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string().nullable().optional(),
  chart_type: z.enum(['line', 'bar']),
  index: z.number().int(),
  series: z.array(dashboardSeriesSchema),
  data: z.array(dashboardPointSchema),
  metadata: z.record(z.string(), z.unknown()).nullable().optional(),
});
export type DashboardChart = z.infer<typeof dashboardChartSchema>;

/** LangSmith's CustomChartsSection, as its monitoring page and the SDK read it. */
export const projectDashboardSchema = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string().nullable().optional(),
  index: z.number().int().nullable().optional(),
  session_id: z.string().nullable().optional(),
  charts: z.array(dashboardChartSchema),
  /** The range and bucket width actually used (defaults applied, start aligned to the stride). */
  metadata: z.object({ start_time: z.string(), end_time: z.string(), stride: timedeltaSchema, timezone: z.string(), buckets: z.number().int() }),
});
export type ProjectDashboard = z.infer<typeof projectDashboardSchema>;

/** At most this many saved filters per project: the list is read whole by the runs view. */
export const SAVED_FILTERS_MAX = 100;

/** POST /api/v1/sessions/{session_id}/filters: a named filter of the project's runs, shared by the workspace. */
export const savedFilterCreateSchema = z.object({
  name: z.string().trim().min(1).max(200),
  filter: z.string().trim().min(1).max(10_000),
});
export type SavedFilterCreate = z.infer<typeof savedFilterCreateSchema>;

export const savedFilterSchema = z.object({
  id: z.string(),
  session_id: z.string(),
  name: z.string(),
  filter: z.string(),
  created_at: z.string(),
});
export type SavedFilter = z.infer<typeof savedFilterSchema>;

export const savedFilterParamSchema = z.object({ session_id: uuid, filter_id: uuid });
