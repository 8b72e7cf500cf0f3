import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ApiClient } from './api-client';
import { UsageError } from './errors';
import { outputMode, type Io, type OutputMode } from './output';
import { resolveConnection } from './settings';

export type Options = NonNullable<ParseArgsConfig['options']>;
export type Values = Record<string, string | boolean | string[] | undefined>;

export interface Context {
  values: Values;
  positionals: string[];
  io: Io;
  mode: OutputMode;
  /** The API client, from the flags and the SDKs' environment variables (a missing key is a usage error). */
  client(): ApiClient;
}

export interface Command {
  /** e.g. ['deployments', 'list'] */
  path: string[];
  summary: string;
  /** The positional arguments, as the usage line shows them (`<id>`, `[dir]`). */
  args?: string;
  /** How many positional arguments: [min, max]. */
  arity?: [number, number];
  options: Options;
  /** One line per option, in the help's order. */
  help: [string, string][];
  /** Longer notes printed under the options. */
  notes?: string;
  /**
   * The command prints one value a script captures (a key, an id, an address): plain text unless --json, whatever
   * stdout is. Listing commands default to JSON lines when stdout is not a terminal.
   */
  printsValue?: boolean;
  run(ctx: Context): Promise<number>;
}

export const GLOBAL_OPTIONS: Options = {
  endpoint: { type: 'string' },
  'api-key': { type: 'string' },
  'control-plane-url': { type: 'string' },
  json: { type: 'boolean' },
  table: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export const GLOBAL_HELP: [string, string][] = [
  ['--endpoint <url>', 'the service (default: $LANGSMITH_ENDPOINT, $LANGCHAIN_ENDPOINT, http://127.0.0.1:1984)'],
  ['--api-key <key>', 'the API key (default: $LANGSMITH_API_KEY, $LANGCHAIN_API_KEY)'],
  ['--control-plane-url <url>', 'the control plane (default: $TRACEHOUSE_CONTROL_PLANE_URL, else the endpoint)'],
  ['--json', 'JSON output (one object per line); the default when stdout is not a terminal'],
  ['--table', 'table output; the default on a terminal'],
  ['-h, --help', 'this help'],
];

export const VERSION = '0.1.0';

function columns(rows: [string, string][]): string {
  const w = Math.max(...rows.map(([a]) => a.length));
  return rows.map(([a, b]) => `  ${a.padEnd(w)}  ${b}`).join('\n');
}

export function commandHelp(c: Command): string {
  const usage = `tracehouse ${c.path.join(' ')}${c.args ? ` ${c.args}` : ''} [options]`;
  const own = c.help.length ? `\nOptions:\n${columns(c.help)}\n` : '';
  return `${c.summary}\n\nUsage: ${usage}\n${own}\nGlobal options:\n${columns(GLOBAL_HELP)}\n${c.notes ? `\n${c.notes.trim()}\n` : ''}\nExit codes: 0 ok, 1 failure (the service refused, a build or export failed, a wait timed out), 2 usage.\n`;
}

export function groupHelp(commands: Command[], prefix: string[]): string {
  const list = commands.filter((c) => prefix.every((p, i) => c.path[i] === p));
  const title = prefix.length ? `tracehouse ${prefix.join(' ')}` : 'tracehouse: the Tracehouse command line, for people and pipelines';
  return (
    `${title}\n\nUsage: tracehouse ${prefix.length ? `${prefix.join(' ')} ` : ''}<command> [options]\n\nCommands:\n` +
    `${columns(list.map((c) => [`${c.path.join(' ')}${c.args ? ` ${c.args}` : ''}`, c.summary]))}\n\n` +
    `Run \`tracehouse <command> --help\` for a command's options. Exit codes: 0 ok, 1 failure, 2 usage.\n`
  );
}

/** Parses a command's arguments; every problem is a UsageError. */
export function parseCommand(c: Command, args: string[], io: Io, userAgent: string): Context | 'help' {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args, options: { ...GLOBAL_OPTIONS, ...c.options }, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (parsed.values.help) return 'help';
  const [min, max] = c.arity ?? [0, 0];
  if (parsed.positionals.length < min) throw new UsageError(`missing argument: ${c.args ?? ''}`.trim());
  if (parsed.positionals.length > max) throw new UsageError(`unexpected argument: ${parsed.positionals[max]}`);
  if (parsed.values.json && parsed.values.table) throw new UsageError('--json and --table exclude each other');
  const values = parsed.values;
  let client: ApiClient | undefined;
  return {
    values,
    positionals: parsed.positionals,
    io,
    mode: c.printsValue ? (values.json ? 'json' : 'table') : outputMode(values as { json?: boolean; table?: boolean }, io),
    client: () => (client ??= new ApiClient(resolveConnection(values as Record<string, string>, io.env), userAgent)),
  };
}

/** Option readers that turn a bad value into a usage error naming the option. */
export const read = {
  str(v: Values, name: string): string | undefined {
    const x = v[name];
    return typeof x === 'string' ? x : undefined;
  },
  required(v: Values, name: string): string {
    const x = read.str(v, name);
    if (x === undefined || x === '') throw new UsageError(`--${name} is required`);
    return x;
  },
  list(v: Values, name: string): string[] {
    const x = v[name];
    return Array.isArray(x) ? x : typeof x === 'string' ? [x] : [];
  },
  int(v: Values, name: string, min: number, max: number): number | undefined {
    const x = read.str(v, name);
    if (x === undefined) return undefined;
    const n = Number(x);
    if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`--${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(x)}`);
    return n;
  },
  /** Seconds as a number (fractions allowed), returned in milliseconds. */
  seconds(v: Values, name: string, fallback: number): number {
    const x = read.str(v, name);
    if (x === undefined) return fallback * 1000;
    const n = Number(x);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number of seconds, not ${JSON.stringify(x)}`);
    return n * 1000;
  },
  csv(v: Values, name: string): string[] | undefined {
    const x = read.str(v, name);
    if (x === undefined) return undefined;
    const parts = x.split(',').map((s) => s.trim()).filter(Boolean);
    if (parts.length === 0) throw new UsageError(`--${name} needs at least one name`);
    return parts;
  },
};

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
