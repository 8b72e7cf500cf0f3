import type { RunQuery } from '@th/contracts';
import { route } from '../api-client';
import { read, type Command, type Context } from '../command';
import { printRows, type Column } from '../output';
import { projectId } from '../projects';

const QUERY_RUNS = route('post', '/api/v1/runs/query');

type Run = Record<string, unknown>;
/** The service's page size limit (runQuerySchema: limit 1-1000). */
const PAGE = 1000;
const DEFAULT_COLUMNS = ['id', 'name', 'run_type', 'status', 'start_time', 'end_time', 'total_tokens', 'error'];

async function query(ctx: Context): Promise<number> {
  const v = ctx.values;
  const client = ctx.client();
  const limit = read.int(v, 'limit', 1, 1_000_000) ?? 100;
  const select = read.csv(v, 'select');
  const projects = read.list(v, 'project');
  const order = read.str(v, 'order');
  const base: Partial<RunQuery> = {
    session: projects.length ? await Promise.all(projects.map((p) => projectId(client, p))) : undefined,
    filter: read.str(v, 'filter'),
    trace_filter: read.str(v, 'trace-filter'),
    is_root: v.root ? true : undefined,
    select: select as RunQuery['select'],
    order: order as RunQuery['order'] | undefined,
  };
  const columns: Column<Run>[] = (select ?? DEFAULT_COLUMNS).map((f) => ({ header: f, value: (r) => r[f] }));
  let cursor: string | null = null;
  let seen = 0;
  const buffered: Run[] = [];
  // JSON lines stream page by page; a table needs every row to size its columns.
  do {
    const page: { runs: Run[]; cursors: { next: string | null } } = await client.call(QUERY_RUNS, {
      body: { ...base, limit: Math.min(PAGE, limit - seen), ...(cursor ? { cursor } : {}) },
    });
    seen += page.runs.length;
    // The service adds the fields its cursor needs (start_time, trace_id): --select prints only what was asked for.
    const rows = select ? page.runs.map((r) => Object.fromEntries(select.map((f) => [f, r[f]]))) : page.runs;
    if (ctx.mode === 'json') printRows(ctx.io, 'json', rows, columns);
    else buffered.push(...rows);
    cursor = page.runs.length ? page.cursors.next : null;
  } while (cursor && seen < limit);
  if (ctx.mode === 'table') printRows(ctx.io, 'table', buffered, columns);
  return 0;
}

export const RUNS_COMMANDS: Command[] = [
  {
    path: ['runs', 'query'],
    summary: 'Query runs with the filter language',
    options: {
      project: { type: 'string', short: 'p', multiple: true },
      filter: { type: 'string', short: 'f' },
      'trace-filter': { type: 'string' },
      root: { type: 'boolean' },
      select: { type: 'string' },
      limit: { type: 'string', short: 'l' },
      order: { type: 'string' },
    },
    help: [
      ['-p, --project <name|id>', 'runs of this tracing project (repeatable)'],
      ['-f, --filter <expr>', 'e.g. and(eq(run_type, "llm"), gt(latency, 2))'],
      ['--trace-filter <expr>', "a filter on each run's root run"],
      ['--root', 'root runs only'],
      ['--select <a,b,...>', 'the fields to return (and the table columns)'],
      ['-l, --limit <n>', 'at most n runs (default 100), fetched in pages'],
      ['--order <asc|desc>', 'by start time (default desc)'],
    ],
    notes: `
The filter language: eq, neq, gt, gte, lt, lte, has, search, in, like, ilike, and, or, not over the run fields,
latency, metadata_key/value, input_key/value, output_key/value, feedback_key/score/value. --json prints one run per
line with every selected field.`,
    run: query,
  },
];
