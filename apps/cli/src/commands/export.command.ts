import { TERMINAL_EXPORT_STATUSES, type BulkExport, type BulkExportCreate, type ExportDestination, type ExportDestinationCreate } from '@th/contracts';
import { route, type ApiClient } from '../api-client';
import { read, type Command, type Context } from '../command';
import { CommandFailed } from '../errors';
import { Progress, printRecord, printRows, sleep, type Column } from '../output';
import { projectId } from '../projects';

const R = {
  createDestination: route('post', '/api/v1/bulk-exports/destinations'),
  listDestinations: route('get', '/api/v1/bulk-exports/destinations'),
  create: route('post', '/api/v1/bulk-exports'),
  list: route('get', '/api/v1/bulk-exports'),
  get: route('get', '/api/v1/bulk-exports/{export_id}'),
};

const POLL_MS = 500;

const EXPORT_COLUMNS: Column<BulkExport>[] = [
  { header: 'id', value: (e) => e.id },
  { header: 'status', value: (e) => e.status },
  { header: 'rows', value: (e) => e.rows_written },
  { header: 'files', value: (e) => e.files_written },
  { header: 'start', value: (e) => e.start_time },
  { header: 'end', value: (e) => e.end_time },
  { header: 'error', value: (e) => e.error },
];

/** Waits for an export to end: COMPLETED is success, every other end a failure with the export's error. */
async function waitFor(ctx: Context, client: ApiClient, id: string, timeoutMs: number): Promise<number> {
  const progress = new Progress(ctx.io);
  const deadline = Date.now() + timeoutMs;
  let e: BulkExport;
  try {
    for (;;) {
      e = await client.call<BulkExport>(R.get, { params: { export_id: id } });
      progress.update(e.status, `${e.rows_written} rows, ${e.files_written} files`);
      if (TERMINAL_EXPORT_STATUSES.includes(e.status)) break;
      if (Date.now() > deadline) throw new CommandFailed(`export ${id} did not finish within ${timeoutMs / 1000}s (last status ${e.status})`);
      await sleep(POLL_MS);
    }
  } finally {
    progress.stop();
  }
  printRecord(ctx.io, ctx.mode, e);
  if (e.status !== 'COMPLETED') throw new CommandFailed(`export ${id} ${e.status}${e.error ? `: ${e.error}` : ''}`);
  return 0;
}

async function create(ctx: Context): Promise<number> {
  const v = ctx.values;
  const client = ctx.client();
  const interval = read.int(v, 'interval-hours', 1, 168);
  const body: BulkExportCreate = {
    bulk_export_destination_id: read.required(v, 'destination'),
    session_id: await projectId(client, read.required(v, 'project')),
    start_time: read.required(v, 'start'),
    end_time: read.str(v, 'end'),
    interval_hours: interval,
    filter: read.str(v, 'filter'),
    export_fields: read.csv(v, 'fields') as BulkExportCreate['export_fields'],
    format_version: 'v2_beta',
  };
  const e = await client.call<BulkExport>(R.create, { body });
  if (!v.wait) {
    if (ctx.mode === 'json') printRecord(ctx.io, 'json', e);
    else ctx.io.stdout.write(`${e.id}\n`);
    return 0;
  }
  ctx.io.stderr.write(`created export ${e.id}\n`);
  return waitFor(ctx, client, e.id, read.seconds(v, 'timeout', 3600));
}

async function status(ctx: Context): Promise<number> {
  const e = await ctx.client().call<BulkExport>(R.get, { params: { export_id: ctx.positionals[0] } });
  printRecord(ctx.io, ctx.mode, e);
  return 0;
}

async function list(ctx: Context): Promise<number> {
  const rows = await ctx.client().call<BulkExport[]>(R.list, { query: { limit: read.int(ctx.values, 'limit', 1, 1000) ?? 100 } });
  printRows(ctx.io, ctx.mode, rows, EXPORT_COLUMNS);
  return 0;
}

async function createDestination(ctx: Context): Promise<number> {
  const v = ctx.values;
  const env = ctx.io.env;
  const body: ExportDestinationCreate = {
    destination_type: 's3',
    display_name: read.str(v, 'display-name') ?? read.required(v, 'bucket'),
    config: {
      bucket_name: read.required(v, 'bucket'),
      prefix: read.str(v, 'prefix') ?? '',
      region: read.str(v, 'region') ?? env.AWS_REGION ?? null,
      endpoint_url: read.str(v, 'endpoint-url') ?? null,
    },
    credentials: {
      access_key_id: read.str(v, 'access-key-id') ?? env.AWS_ACCESS_KEY_ID ?? '',
      secret_access_key: env.AWS_SECRET_ACCESS_KEY ?? '',
      session_token: env.AWS_SESSION_TOKEN ?? null,
    },
  };
  const d = await ctx.client().call<ExportDestination>(R.createDestination, { body });
  if (ctx.mode === 'json') printRecord(ctx.io, 'json', d);
  else ctx.io.stdout.write(`${d.id}\n`);
  return 0;
}

async function listDestinations(ctx: Context): Promise<number> {
  const rows = await ctx.client().call<ExportDestination[]>(R.listDestinations);
  printRows(ctx.io, ctx.mode, rows, [
    { header: 'id', value: (d) => d.id },
    { header: 'name', value: (d) => d.display_name },
    { header: 'bucket', value: (d) => d.config.bucket_name },
    { header: 'prefix', value: (d) => d.config.prefix },
    { header: 'endpoint', value: (d) => d.config.endpoint_url },
  ]);
  return 0;
}

export const EXPORT_COMMANDS: Command[] = [
  {
    path: ['export', 'create'],
    summary: 'Start a bulk export of a project’s runs to a destination (Parquet on S3)',
    options: {
      destination: { type: 'string', short: 'd' },
      project: { type: 'string', short: 'p' },
      start: { type: 'string' },
      end: { type: 'string' },
      'interval-hours': { type: 'string' },
      filter: { type: 'string', short: 'f' },
      fields: { type: 'string' },
      wait: { type: 'boolean', short: 'w' },
      timeout: { type: 'string' },
    },
    help: [
      ['-d, --destination <id>', 'the destination (see `export destinations create`)'],
      ['-p, --project <name|id>', 'the tracing project'],
      ['--start <time>', 'window start (ISO 8601)'],
      ['--end <time>', 'window end, exclusive (one-time export)'],
      ['--interval-hours <n>', 'instead of --end: a scheduled export every n hours (1-168)'],
      ['-f, --filter <expr>', 'only runs matching the filter language'],
      ['--fields <a,b,...>', 'only these run fields (id is always written)'],
      ['-w, --wait', 'wait for the export to end (exit 1 unless COMPLETED)'],
      ['--timeout <seconds>', 'with --wait: give up after this long (default 3600)'],
    ],
    notes: 'Prints the export id (--json: the export; with --wait, the finished export). Bulk export needs the Plus or Enterprise plan.',
    printsValue: true,
    run: create,
  },
  { path: ['export', 'status'], summary: 'Show a bulk export: status, rows and files written', args: '<export-id>', arity: [1, 1], options: {}, help: [], run: status },
  {
    path: ['export', 'wait'],
    summary: 'Wait for a bulk export to end; exit 1 unless it COMPLETED',
    args: '<export-id>',
    arity: [1, 1],
    options: { timeout: { type: 'string' } },
    help: [['--timeout <seconds>', 'give up after this long (default 3600)']],
    run: (ctx) => waitFor(ctx, ctx.client(), ctx.positionals[0], read.seconds(ctx.values, 'timeout', 3600)),
  },
  { path: ['export', 'list'], summary: 'List bulk exports, newest first', options: { limit: { type: 'string' } }, help: [['--limit <n>', 'at most n (1-1000, default 100)']], run: list },
  {
    path: ['export', 'destinations', 'create'],
    summary: 'Register an S3-compatible bucket as a destination (checked by writing a small object)',
    options: {
      bucket: { type: 'string' },
      prefix: { type: 'string' },
      region: { type: 'string' },
      'endpoint-url': { type: 'string' },
      'access-key-id': { type: 'string' },
      'display-name': { type: 'string' },
    },
    help: [
      ['--bucket <name>', 'the bucket'],
      ['--prefix <path>', 'a key prefix inside the bucket'],
      ['--region <region>', 'default $AWS_REGION'],
      ['--endpoint-url <url>', 'an S3-compatible endpoint (default AWS)'],
      ['--access-key-id <id>', 'default $AWS_ACCESS_KEY_ID'],
      ['--display-name <name>', 'default the bucket name'],
    ],
    notes: 'The secret key is read from $AWS_SECRET_ACCESS_KEY (and $AWS_SESSION_TOKEN), never from a flag. Prints the destination id.',
    printsValue: true,
    run: createDestination,
  },
  { path: ['export', 'destinations', 'list'], summary: 'List bulk-export destinations', options: {}, help: [], run: listDestinations },
];
