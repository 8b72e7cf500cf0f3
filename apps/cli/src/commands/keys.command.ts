import type { ApiKeyCreate, ApiKeyCreated, ApiKeyInfo } from '@th/contracts';
import { route } from '../api-client';
import { read, type Command, type Context } from '../command';
import { printRecord, printRows } from '../output';

const R = {
  list: route('get', '/api/v1/api-key'),
  create: route('post', '/api/v1/api-key'),
  revoke: route('delete', '/api/v1/api-key/{id}'),
};

async function create(ctx: Context): Promise<number> {
  const v = ctx.values;
  const body: ApiKeyCreate = { description: read.str(v, 'description'), expires_at: read.str(v, 'expires-at'), role_id: read.str(v, 'role-id') };
  const k = await ctx.client().call<ApiKeyCreated>(R.create, { body });
  if (ctx.mode === 'json') printRecord(ctx.io, 'json', k);
  else {
    ctx.io.stderr.write(`created key ${k.id} (${k.short_key}); it is shown only this once:\n`);
    ctx.io.stdout.write(`${k.key}\n`);
  }
  return 0;
}

async function list(ctx: Context): Promise<number> {
  const keys = await ctx.client().call<ApiKeyInfo[]>(R.list);
  printRows(ctx.io, ctx.mode, keys, [
    { header: 'id', value: (k) => k.id },
    { header: 'key', value: (k) => k.short_key },
    { header: 'description', value: (k) => k.description },
    { header: 'created', value: (k) => k.created_at },
    { header: 'expires', value: (k) => k.expires_at },
  ]);
  return 0;
}

async function revoke(ctx: Context): Promise<number> {
  await ctx.client().call(R.revoke, { params: { id: ctx.positionals[0] } });
  if (ctx.mode === 'json') printRecord(ctx.io, 'json', { id: ctx.positionals[0], revoked: true });
  else ctx.io.stdout.write(`revoked ${ctx.positionals[0]}\n`);
  return 0;
}

export const KEYS_COMMANDS: Command[] = [
  {
    path: ['keys', 'create'],
    summary: 'Create a workspace API key (printed once)',
    options: { description: { type: 'string' }, 'expires-at': { type: 'string' }, 'role-id': { type: 'string' } },
    help: [
      ['--description <text>', 'what the key is for'],
      ['--expires-at <time>', 'when it stops working (ISO 8601, in the future)'],
      ['--role-id <id>', 'the role it carries (default Workspace Admin)'],
    ],
    notes: 'Prints the whole key on stdout (--json: the key record with `key`); the service keeps only its hash.',
    printsValue: true,
    run: create,
  },
  { path: ['keys', 'list'], summary: "List the workspace's API keys (prefixes only)", options: {}, help: [], run: list },
  { path: ['keys', 'revoke'], summary: 'Revoke a workspace API key', args: '<key-id>', arity: [1, 1], options: {}, help: [], printsValue: true, run: revoke },
];
