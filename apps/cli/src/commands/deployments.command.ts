import type { Deployment, DeploymentList, Revision, RevisionList } from '@th/contracts';
import { route, type ApiClient } from '../api-client';
import { UUID, read, type Command, type Context } from '../command';
import { ApiError, CommandFailed } from '../errors';
import { Progress, printRecord, printRows, sleep, type Column } from '../output';

export const DEPLOYMENT_ROUTES = {
  create: route('post', '/v2/deployments'),
  list: route('get', '/v2/deployments'),
  get: route('get', '/v2/deployments/{deployment_id}'),
  patch: route('patch', '/v2/deployments/{deployment_id}'),
  delete: route('delete', '/v2/deployments/{deployment_id}'),
  revisions: route('get', '/v2/deployments/{deployment_id}/revisions'),
  revision: route('get', '/v2/deployments/{deployment_id}/revisions/{revision_id}'),
  uploadUrl: route('post', '/v2/deployments/{deployment_id}/upload-url'),
  gitInstall: route('get', '/v1/integrations/git_host/install'),
};

/** A deployment by name, or null. */
export async function findDeployment(client: ApiClient, name: string): Promise<Deployment | null> {
  const page = await client.call<DeploymentList>(DEPLOYMENT_ROUTES.list, { query: { name, limit: 1 } });
  return page.resources[0] ?? null;
}

/** A deployment named by id or by name. */
async function resolveDeployment(client: ApiClient, ref: string): Promise<Deployment> {
  if (UUID.test(ref)) return client.call<Deployment>(DEPLOYMENT_ROUTES.get, { params: { deployment_id: ref } });
  const d = await findDeployment(client, ref);
  if (!d) throw new CommandFailed(`no deployment named ${JSON.stringify(ref)}`);
  return d;
}

const DEPLOYMENT_COLUMNS: Column<Deployment>[] = [
  { header: 'id', value: (d) => d.id },
  { header: 'name', value: (d) => d.name },
  { header: 'source', value: (d) => d.source },
  { header: 'status', value: (d) => d.status },
  { header: 'active revision', value: (d) => d.active_revision_id },
  { header: 'url', value: (d) => d.source_config.custom_url },
];

const REVISION_COLUMNS: Column<Revision>[] = [
  { header: 'id', value: (r) => r.id },
  { header: 'status', value: (r) => r.status },
  { header: 'created', value: (r) => r.created_at },
  { header: 'message', value: (r) => r.status_message },
];

const PAGE = 100;

async function list(ctx: Context): Promise<number> {
  const client = ctx.client();
  const limit = read.int(ctx.values, 'limit', 1, 100_000) ?? 100;
  const out: Deployment[] = [];
  for (let offset = 0; out.length < limit; offset += PAGE) {
    const page = await client.call<DeploymentList>(DEPLOYMENT_ROUTES.list, {
      query: { name_contains: read.str(ctx.values, 'name-contains'), status: read.str(ctx.values, 'status'), limit: Math.min(PAGE, limit - out.length), offset },
    });
    out.push(...page.resources);
    if (page.resources.length === 0 || offset + page.resources.length >= page.total) break;
  }
  printRows(ctx.io, ctx.mode, out, DEPLOYMENT_COLUMNS);
  return 0;
}

async function get(ctx: Context): Promise<number> {
  const d = await resolveDeployment(ctx.client(), ctx.positionals[0]);
  printRecord(ctx.io, ctx.mode, ctx.mode === 'json' ? d : { ...d, source_config: undefined, source_revision_config: undefined, url: d.source_config.custom_url, ...flat(d) });
  return 0;
}

/** The nested fields a person reads, lifted for the table view. */
function flat(d: Deployment): Record<string, unknown> {
  const rc = d.source_revision_config;
  return { repo_url: d.source_config.repo_url, repo_ref: rc.repo_ref, image_uri: rc.image_uri, langgraph_config_path: rc.langgraph_config_path, secrets: d.secrets.map((s) => s.name).join(',') };
}

async function revisions(ctx: Context): Promise<number> {
  const client = ctx.client();
  const d = await resolveDeployment(client, ctx.positionals[0]);
  const limit = read.int(ctx.values, 'limit', 1, 100) ?? 20;
  const page = await client.call<RevisionList>(DEPLOYMENT_ROUTES.revisions, { params: { deployment_id: d.id }, query: { limit, status: read.str(ctx.values, 'status') } });
  printRows(ctx.io, ctx.mode, page.resources, REVISION_COLUMNS);
  return 0;
}

async function remove(ctx: Context): Promise<number> {
  const client = ctx.client();
  const d = await resolveDeployment(client, ctx.positionals[0]);
  const deleted = await client.call<Deployment>(DEPLOYMENT_ROUTES.delete, { params: { deployment_id: d.id } });
  if (ctx.values.wait) {
    const timeoutMs = read.seconds(ctx.values, 'timeout', 300);
    const progress = new Progress(ctx.io);
    const deadline = Date.now() + timeoutMs;
    try {
      for (;;) {
        try {
          const now = await client.call<Deployment>(DEPLOYMENT_ROUTES.get, { params: { deployment_id: d.id } });
          progress.update(now.status);
        } catch (err) {
          if (err instanceof ApiError && err.status === 404) break;
          throw err;
        }
        if (Date.now() > deadline) throw new CommandFailed(`deployment ${d.name} was not removed within ${timeoutMs / 1000}s`);
        await sleep(500);
      }
      progress.update('DELETED');
    } finally {
      progress.stop();
    }
  }
  if (ctx.mode === 'json') printRecord(ctx.io, ctx.mode, { ...deleted, status: ctx.values.wait ? 'DELETED' : deleted.status });
  else ctx.io.stdout.write(`${ctx.values.wait ? 'deleted' : 'deleting'} ${d.name} (${d.id})\n`);
  return 0;
}

const refArg = '<deployment>';
const refNote = '<deployment> is an id or a name.';

export const DEPLOYMENTS_COMMANDS: Command[] = [
  {
    path: ['deployments', 'list'],
    summary: 'List deployments',
    options: { 'name-contains': { type: 'string' }, status: { type: 'string' }, limit: { type: 'string' } },
    help: [
      ['--name-contains <text>', 'only names containing the text'],
      ['--status <status>', 'only deployments in this status (READY, UNUSED, ...)'],
      ['--limit <n>', 'at most n deployments (default 100)'],
    ],
    run: list,
  },
  { path: ['deployments', 'get'], summary: 'Show a deployment', args: refArg, arity: [1, 1], options: {}, help: [], notes: refNote, run: get },
  {
    path: ['deployments', 'revisions'],
    summary: "List a deployment's revisions, newest first",
    args: refArg,
    arity: [1, 1],
    options: { status: { type: 'string' }, limit: { type: 'string' } },
    help: [
      ['--status <status>', 'only revisions in this status'],
      ['--limit <n>', 'at most n revisions (1-100, default 20)'],
    ],
    notes: refNote,
    run: revisions,
  },
  {
    path: ['deployments', 'delete'],
    summary: 'Delete a deployment (its server, address, database and files)',
    args: refArg,
    arity: [1, 1],
    options: { wait: { type: 'boolean' }, timeout: { type: 'string' } },
    help: [
      ['--wait', 'wait until the deployment is gone'],
      ['--timeout <seconds>', 'with --wait: give up after this long (default 300)'],
    ],
    notes: refNote,
    printsValue: true,
    run: remove,
  },
];

