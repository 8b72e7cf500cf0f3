import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import * as zlib from 'node:zlib';
import type { Session } from 'chdb';
// Relative on purpose: this server also runs as plain `node dist/tools/ch-server/main.js`, without the @th/* resolver.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { spreadPartDirectories } from '../../clickhouse/src/part-directories';

/**
 * The subset of ClickHouse's HTTP interface that @clickhouse/client uses, served
 * from chDB (ClickHouse embedded as a library) so that several OS processes can
 * share one engine and one data directory through the production client.
 *
 * Deviations from a real server, all deliberate:
 * - every request runs on its own fresh chDB connection, so URL settings,
 *   `database` and in-query `SET`/`USE` never leak into other requests (same as
 *   a server without `session_id`); with `session_id` the connection is kept and
 *   requests of that session run one at a time (a real server answers
 *   SESSION_IS_LOCKED instead). URL settings on a session request persist in it;
 * - results are buffered, not streamed, so errors always arrive as an HTTP error
 *   status (as with `wait_end_of_query=1`);
 * - no authentication, no native (`compress=1`/`decompress=1`) compression, no
 *   external tables, no progress headers; multi-statement queries are not rejected.
 */
export interface ClickHouseHttpServerOptions {
  /** chDB data directory. chDB binds one data directory per process. */
  dataDir: string;
  /** Port on 127.0.0.1; a free one by default. */
  port?: number;
  /** Upper bound on queries executing in chDB at once; further requests wait. Default 8. */
  maxConcurrentQueries?: number;
}

export interface ClickHouseHttpServer {
  /** `http://127.0.0.1:<port>`, for `createClient({ url })`. */
  url: string;
  port: number;
  close(): Promise<void>;
}

interface NativeQueryResult {
  bytes: Uint8Array;
  elapsed: number;
  rowsRead: number;
  bytesRead: number;
}

interface NativeInsertResult {
  elapsed: number;
  rowsWritten: number;
  bytesWritten: number;
}

/**
 * The addon under chdb's public API. Used directly for two things the public API
 * cannot do: binding `{name:Type}` params from the already-escaped strings the
 * client sends (chdb's queryBind would escape them a second time), and raw
 * inserts with the client's own `INSERT ... FORMAT ...` text as the prefix.
 */
interface ChdbNative {
  QueryAsyncConnection(
    connection: unknown,
    query: string,
    format: string,
    params?: Record<string, string>,
  ): Promise<NativeQueryResult>;
  InsertRawAsyncConnection(
    connection: unknown,
    prefix: string,
    payload: Buffer,
    countLines: boolean,
  ): Promise<NativeInsertResult>;
}

type ChdbModule = typeof import('chdb');

/**
 * Loaded on first use rather than imported: loading chdb maps libchdb (~200 MB RSS,
 * ~250 ms), which every importer of @th/testing would otherwise pay.
 */
function loadChdb(): { chdb: ChdbModule; native: ChdbNative } {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const chdb = require('chdb') as ChdbModule;
  // chdb's `exports` map hides dist/loader.js; an absolute path is not subject to it.
  const loader = require(join(dirname(require.resolve('chdb')), 'dist', 'loader.js')) as {
    loadNative(): ChdbNative;
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
  return { chdb, native: loader.loadNative() };
}

const SERVER_DEFAULT_SETTINGS: ReadonlyArray<readonly [string, string]> = [
  // clickhouse-local (and so chDB) enables it; a server does not.
  ['implicit_select', '0'],
];

/** URL parameters that are HTTP-interface controls rather than settings. */
const NON_SETTING_PARAMS = new Set([
  'query',
  'query_id',
  'database',
  'default_format',
  'session_id',
  'session_timeout',
  'session_check',
  'user',
  'password',
  'quota_key',
  'role',
  'compress',
  'decompress',
  'buffer_size',
  'wait_end_of_query',
  'http_wait_end_of_query',
  'enable_http_compression',
  'http_zlib_compression_level',
  'http_native_compression_disable_checksumming_on_decompress',
  'send_progress_in_http_headers',
  'http_headers_progress_interval_ms',
  'http_response_buffer_size',
  'cancel_http_readonly_queries_on_client_close',
  'add_http_cors_header',
  'stacktrace',
]);

/** ClickHouse's exceptionCodeToHTTPStatus, by error type. */
const BAD_REQUEST_TYPES = new Set([
  'CANNOT_PARSE_TEXT',
  'CANNOT_PARSE_ESCAPE_SEQUENCE',
  'CANNOT_PARSE_QUOTED_STRING',
  'CANNOT_PARSE_DATE',
  'CANNOT_PARSE_DATETIME',
  'CANNOT_PARSE_NUMBER',
  'CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING',
  'CANNOT_PARSE_IPV4',
  'CANNOT_PARSE_IPV6',
  'CANNOT_PARSE_INPUT_ASSERTION_FAILED',
  'CANNOT_PARSE_UUID',
  'CANNOT_PARSE_BOOL',
  'DUPLICATE_COLUMN',
  'ILLEGAL_COLUMN',
  'UNKNOWN_ELEMENT_IN_AST',
  'UNKNOWN_TYPE_OF_AST_NODE',
  'TOO_DEEP_AST',
  'TOO_BIG_AST',
  'UNEXPECTED_AST_STRUCTURE',
  'SYNTAX_ERROR',
  'INCORRECT_DATA',
  'TYPE_MISMATCH',
  'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
  'UNKNOWN_QUERY_PARAMETER',
  'BAD_QUERY_PARAMETER',
  'ZLIB_INFLATE_FAILED',
]);
const NOT_FOUND_TYPES = new Set([
  'UNKNOWN_TABLE',
  'UNKNOWN_FUNCTION',
  'UNKNOWN_IDENTIFIER',
  'UNKNOWN_TYPE',
  'UNKNOWN_STORAGE',
  'UNKNOWN_DATABASE',
  'UNKNOWN_SETTING',
  'UNKNOWN_DIRECTION_OF_SORTING',
  'UNKNOWN_AGGREGATE_FUNCTION',
  'UNKNOWN_FORMAT',
  'UNKNOWN_DATABASE_ENGINE',
  'UNKNOWN_TYPE_OF_QUERY',
  'UNKNOWN_ROLE',
]);

class ClickHouseHttpError extends Error {
  constructor(
    readonly code: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** Normalizes a chDB error (or anything thrown) to ClickHouse's `Code: N. DB::Exception: ... (TYPE)`. */
function toClickHouseError(err: unknown): ClickHouseHttpError {
  if (err instanceof ClickHouseHttpError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const codeMatch = /Code: (\d+)\. /.exec(message);
  const typeMatch = /\(([A-Z][A-Z0-9_]{2,})\)\s*$/.exec(message);
  if (codeMatch?.[1] !== undefined && typeMatch?.[1] !== undefined) {
    const body = message.slice(codeMatch.index).trimEnd();
    return new ClickHouseHttpError(Number(codeMatch[1]), typeMatch[1], body);
  }
  return new ClickHouseHttpError(1001, 'STD_EXCEPTION', `Code: 1001. DB::Exception: ${message}. (STD_EXCEPTION)`);
}

function httpStatusFor(type: string): number {
  if (BAD_REQUEST_TYPES.has(type)) return 400;
  if (NOT_FOUND_TYPES.has(type)) return 404;
  if (type === 'READONLY') return 403;
  if (type === 'NOT_IMPLEMENTED') return 501;
  return 500;
}

function chError(code: number, type: string, message: string): ClickHouseHttpError {
  return new ClickHouseHttpError(code, type, `Code: ${code}. DB::Exception: ${message}. (${type})`);
}

/** Skips whitespace, comments and opening parens to the first keyword, upper-cased. */
function firstKeyword(sql: string): string {
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i];
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r' || ch === '(') {
      i++;
    } else if (sql.startsWith('--', i) || ch === '#') {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? sql.length : nl + 1;
    } else if (sql.startsWith('/*', i)) {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else {
      break;
    }
  }
  const m = /^[A-Za-z_]+/.exec(sql.slice(i));
  return m ? m[0].toUpperCase() : '';
}

/**
 * An `INSERT INTO [db.]table [(columns)] FORMAT RowBinary...` whose rows (in the body) are binary: its
 * parts, else null.
 */
function binaryInsert(sql: string): { target: string; columns: string | null; format: string } | null {
  const m = /^\s*INSERT\s+INTO\s+(?:TABLE\s+)?((?:`[^`]+`|\w+)(?:\.(?:`[^`]+`|\w+))?)\s*(?:\(([^)]*)\))?\s*FORMAT\s+(RowBinary\w*)\s*$/i.exec(sql);
  return m ? { target: m[1], columns: m[2] ?? null, format: m[3] } : null;
}

/** The output format named by a trailing `FORMAT x [SETTINGS ...]`, if any. */
function trailingFormat(sql: string): string | undefined {
  const trimmed = sql.replace(/[\s;]+$/, '');
  const m = /\bFORMAT\s+([A-Za-z][A-Za-z0-9_]*)\s*(?:\bSETTINGS\b[\s\S]*)?$/i.exec(trimmed);
  return m?.[1];
}

function contentTypeFor(format: string): string {
  const f = format.toLowerCase();
  if (f.startsWith('json') || f === 'ndjson' || f === 'jsonl') {
    return f === 'json' || f === 'jsoncompact' || f === 'jsonstrings' || f === 'jsoncompactstrings'
      ? 'application/json; charset=UTF-8'
      : 'application/x-ndjson; charset=UTF-8';
  }
  if (f.startsWith('tabseparated') || f.startsWith('tsv')) return 'text/tab-separated-values; charset=UTF-8';
  if (f.startsWith('csv')) return `text/csv; charset=UTF-8; header=${f.includes('withnames') ? 'present' : 'absent'}`;
  if (f.startsWith('rowbinary') || f === 'native' || f === 'parquet' || f.startsWith('arrow') || f === 'orc') {
    return 'application/octet-stream';
  }
  return 'text/plain; charset=UTF-8';
}

/** A ClickHouse string literal (setting values and the like). */
function quoteSettingValue(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function quoteIdentifier(name: string): string {
  return `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolvePromise, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolvePromise(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function decodeBody(body: Buffer, encoding: string | undefined): Buffer {
  const enc = (encoding ?? '').trim().toLowerCase();
  if (enc === '' || enc === 'identity' || body.length === 0) return body;
  try {
    if (enc === 'gzip' || enc === 'x-gzip') return zlib.gunzipSync(body);
    if (enc === 'deflate') return zlib.inflateSync(body);
    if (enc === 'br') return zlib.brotliDecompressSync(body);
  } catch (err) {
    throw chError(354, 'ZLIB_INFLATE_FAILED', `inflate failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  throw chError(48, 'NOT_IMPLEMENTED', `Unsupported Content-Encoding: ${enc}`);
}

interface MultipartPart {
  name: string;
  filename?: string;
  data: Buffer;
}

/** Enough multipart/form-data for the client's `use_multipart_params` bodies. */
function parseMultipart(body: Buffer, boundary: string): MultipartPart[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: MultipartPart[] = [];
  let pos = body.indexOf(delimiter);
  while (pos >= 0) {
    pos += delimiter.length;
    if (body.subarray(pos, pos + 2).toString() === '--') break;
    if (body.subarray(pos, pos + 2).toString() === '\r\n') pos += 2;
    const headerEnd = body.indexOf('\r\n\r\n', pos);
    if (headerEnd < 0) break;
    const headers = body.subarray(pos, headerEnd).toString('utf8');
    const next = body.indexOf(delimiter, headerEnd + 4);
    if (next < 0) break;
    let end = next;
    if (body[end - 2] === 0x0d && body[end - 1] === 0x0a) end -= 2;
    const name = /name="([^"]*)"/i.exec(headers)?.[1];
    const filename = /filename="([^"]*)"/i.exec(headers)?.[1];
    if (name !== undefined) parts.push({ name, filename, data: body.subarray(headerEnd + 4, end) });
    pos = next;
  }
  return parts;
}

class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];
  constructor(private readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((r) => this.waiters.push(r));
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiters.shift()?.();
    }
  }
}

/** One promise chain, so work queued on it runs strictly one at a time. */
class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn);
    this.tail = next.catch(() => undefined);
    return next;
  }
}

/**
 * chDB keeps bound parameters in engine-wide state: two parameterized queries in
 * flight at once, even on different connections, can read each other's values
 * ("Substitution not set") or abort the engine. chdb serializes its own
 * queryBind calls the same way.
 */
const paramQueue = new SerialQueue();

interface ParsedRequest {
  queryId: string;
  sessionId: string | undefined;
  database: string | undefined;
  defaultFormat: string;
  settings: Array<[string, string]>;
  params: Record<string, string>;
  queryParam: string | undefined;
  body: Buffer;
  compressResponse: boolean;
}

interface Outcome {
  format: string;
  data: Buffer;
  summary: Record<string, string>;
}

let activeDataDir: string | undefined;

export async function startClickHouseHttpServer(opts: ClickHouseHttpServerOptions): Promise<ClickHouseHttpServer> {
  const dataDir = resolve(opts.dataDir);
  if (activeDataDir !== undefined) {
    throw new Error(
      `startClickHouseHttpServer: this process already serves ${activeDataDir}; chDB binds one data ` +
        'directory per process (run another server in its own process, e.g. tools/ch-server)',
    );
  }
  activeDataDir = dataDir;

  let mainSession: Session;
  let chdb: ChdbModule;
  let native: ChdbNative;
  let versionString: string;
  let timezone: string;
  try {
    mkdirSync(dataDir, { recursive: true });
    ({ chdb, native } = loadChdb());
    // Keeps the data directory bound for the server's lifetime; requests use their own connections.
    mainSession = new chdb.Session(dataDir);
    const info = (await mainSession.queryAsync('SELECT version() AS v, timezone() AS tz', { format: 'JSONEachRow' })).json<{
      v: string;
      tz: string;
    }>();
    versionString = info.v;
    timezone = info.tz;
  } catch (err) {
    activeDataDir = undefined;
    throw err;
  }

  const displayName = hostname();
  const limiter = new Semaphore(opts.maxConcurrentQueries ?? 8);
  const sessions = new Map<string, { session: Session; queue: SerialQueue }>();
  const inFlight = new Set<Promise<void>>();
  let closing = false;

  const prepareConnection = async (session: Session, req: ParsedRequest, isNew: boolean): Promise<void> => {
    if (req.database !== undefined) {
      await native.QueryAsyncConnection(session.connection, `USE ${quoteIdentifier(req.database)}`, 'TabSeparated');
    }
    const settings = isNew ? [...SERVER_DEFAULT_SETTINGS, ...req.settings] : req.settings;
    // `readonly` last: once set, no further SET is accepted.
    settings.sort(([a], [b]) => Number(a === 'readonly') - Number(b === 'readonly'));
    for (const [name] of settings) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw chError(115, 'UNKNOWN_SETTING', `Unknown setting '${name}'`);
    }
    if (settings.length > 0) {
      const sql = `SET ${settings.map(([k, v]) => `${k} = ${quoteSettingValue(v)}`).join(', ')}`;
      await native.QueryAsyncConnection(session.connection, sql, 'TabSeparated');
    }
  };

  const execute = async (session: Session, req: ParsedRequest): Promise<Outcome> => {
    const started = process.hrtime.bigint();
    const elapsedNs = (): string => String(process.hrtime.bigint() - started);
    const hasParams = Object.keys(req.params).length > 0;
    const queryParam = req.queryParam ?? '';

    const binary = queryParam.trim() !== '' && req.body.length > 0 && !hasParams ? binaryInsert(queryParam) : null;
    if (binary) {
      // chDB ends inline insert data at the first empty line ("\n\n"), which binary values hold at
      // random: a binary body is read from a file instead (FROM INFILE), as ClickHouse would read it from
      // the socket.
      mkdirSync(`${dataDir}.inserts`, { recursive: true });
      const file = join(`${dataDir}.inserts`, `${randomUUID()}.bin`);
      writeFileSync(file, req.body);
      try {
        const r = await native.QueryAsyncConnection(
          session.connection,
          `INSERT INTO ${binary.target}${binary.columns ? ` (${binary.columns})` : ''} FROM INFILE ${quoteSettingValue(file)} FORMAT ${binary.format}`,
          'TabSeparated',
        );
        return {
          format: req.defaultFormat,
          data: Buffer.alloc(0),
          summary: summary(r.rowsRead, r.bytesRead, r.rowsRead, r.bytesRead, 0, 0, elapsedNs()),
        };
      } finally {
        rmSync(file, { force: true });
      }
    }

    if (queryParam.trim() !== '' && req.body.length > 0 && firstKeyword(queryParam) === 'INSERT' && !hasParams) {
      // The client's insert: statement in the URL, rows in the body, kept as bytes.
      const r = await native.InsertRawAsyncConnection(session.connection, queryParam, req.body, false);
      return {
        format: req.defaultFormat,
        data: Buffer.alloc(0),
        summary: summary(r.rowsWritten, r.bytesWritten, r.rowsWritten, r.bytesWritten, 0, 0, elapsedNs()),
      };
    }

    const sql = [queryParam, req.body.toString('utf8')].filter((s) => s.trim() !== '').join('\n');
    if (sql.trim() === '') throw chError(62, 'SYNTAX_ERROR', 'Empty query');
    const isInsert = firstKeyword(sql) === 'INSERT';
    const format = (!isInsert ? trailingFormat(sql) : undefined) ?? req.defaultFormat;
    const run = (): Promise<NativeQueryResult> =>
      hasParams
        ? native.QueryAsyncConnection(session.connection, sql, req.defaultFormat, req.params)
        : native.QueryAsyncConnection(session.connection, sql, req.defaultFormat);
    const r = hasParams ? await paramQueue.run(run) : await run();
    // A new table gets the part placement hint the in-process engine gives its tables (see part-directories.ts).
    if (firstKeyword(sql) === 'CREATE') spreadPartDirectories(dataDir);
    const data = Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength);
    return {
      format,
      data,
      summary: summary(r.rowsRead, r.bytesRead, 0, 0, r.rowsRead, r.bytesRead, elapsedNs()),
    };
  };

  const runRequest = async (req: ParsedRequest): Promise<Outcome> => {
    if (req.sessionId !== undefined) {
      let entry = sessions.get(req.sessionId);
      const isNew = entry === undefined;
      if (entry === undefined) {
        entry = { session: new chdb.Session(dataDir), queue: new SerialQueue() };
        sessions.set(req.sessionId, entry);
      }
      const { session, queue } = entry;
      return queue.run(() =>
        limiter.run(async () => {
          await prepareConnection(session, req, isNew);
          return execute(session, req);
        }),
      );
    }
    return limiter.run(async () => {
      const session = new chdb.Session(dataDir);
      try {
        await prepareConnection(session, req, true);
        return await execute(session, req);
      } finally {
        session.close();
      }
    });
  };

  const baseHeaders = (queryId: string | undefined): Record<string, string> => ({
    'X-ClickHouse-Server-Display-Name': displayName,
    'X-ClickHouse-Timezone': timezone,
    ...(queryId !== undefined ? { 'X-ClickHouse-Query-Id': queryId } : {}),
  });

  const send = (
    res: ServerResponse,
    req: IncomingMessage,
    status: number,
    headers: Record<string, string>,
    body: Buffer,
    compress: boolean,
  ): void => {
    let payload = body;
    const accept = String(req.headers['accept-encoding'] ?? '').toLowerCase();
    if (compress && body.length > 0) {
      if (/\bgzip\b/.test(accept)) {
        payload = zlib.gzipSync(body);
        headers['Content-Encoding'] = 'gzip';
      } else if (/\bdeflate\b/.test(accept)) {
        payload = zlib.deflateSync(body);
        headers['Content-Encoding'] = 'deflate';
      } else if (/\bbr\b/.test(accept)) {
        payload = zlib.brotliCompressSync(body);
        headers['Content-Encoding'] = 'br';
      }
    }
    headers['Content-Length'] = String(payload.length);
    res.writeHead(status, headers);
    res.end(payload);
  };

  const sendError = (
    res: ServerResponse,
    req: IncomingMessage,
    err: unknown,
    queryId: string | undefined,
    compress: boolean,
  ): void => {
    const e = toClickHouseError(err);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    send(
      res,
      req,
      httpStatusFor(e.type),
      {
        ...baseHeaders(queryId),
        'Content-Type': 'text/plain; charset=UTF-8',
        'X-ClickHouse-Exception-Code': String(e.code),
      },
      Buffer.from(`${e.message} (version ${versionString})\n`),
      compress,
    );
  };

  const parseRequest = async (req: IncomingMessage, url: URL): Promise<ParsedRequest> => {
    const raw = await readBody(req);
    let body = decodeBody(raw, req.headers['content-encoding']);
    const entries: Array<[string, string]> = [...url.searchParams.entries()];

    const contentType = String(req.headers['content-type'] ?? '');
    const boundary = /^multipart\/form-data;.*boundary="?([^";]+)"?/i.exec(contentType)?.[1];
    if (boundary !== undefined) {
      for (const part of parseMultipart(body, boundary)) {
        if (part.filename === undefined) entries.push([part.name, part.data.toString('utf8')]);
      }
      body = Buffer.alloc(0);
    }

    const get = (name: string): string | undefined => {
      for (let i = entries.length - 1; i >= 0; i--) {
        const entry = entries[i];
        if (entry !== undefined && entry[0] === name) return entry[1];
      }
      return undefined;
    };
    if (get('decompress') === '1' || get('compress') === '1') {
      throw chError(48, 'NOT_IMPLEMENTED', 'ClickHouse native HTTP compression (compress/decompress=1) is not supported');
    }

    const params: Record<string, string> = {};
    const settings = new Map<string, string>();
    for (const [key, value] of entries) {
      if (key.startsWith('param_')) params[key.slice('param_'.length)] = value;
      else if (!NON_SETTING_PARAMS.has(key)) settings.set(key, value);
    }
    const headerValue = (name: string): string | undefined => {
      const v = req.headers[name];
      return typeof v === 'string' && v !== '' ? v : undefined;
    };
    const compressionFlag = get('enable_http_compression');
    return {
      queryId: get('query_id') || headerValue('x-clickhouse-query-id') || randomUUID(),
      sessionId: get('session_id') || undefined,
      database: get('database') || headerValue('x-clickhouse-database'),
      defaultFormat: get('default_format') || headerValue('x-clickhouse-format') || 'TabSeparated',
      settings: [...settings.entries()],
      params,
      queryParam: get('query'),
      body,
      compressResponse: compressionFlag === '1' || compressionFlag === 'true',
    };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = req.method ?? 'GET';
    const textHeaders = { ...baseHeaders(undefined), 'Content-Type': 'text/plain; charset=UTF-8' };

    if (url.pathname === '/ping' || url.pathname === '/replicas_status') {
      req.resume();
      send(res, req, 200, textHeaders, Buffer.from(method === 'HEAD' ? '' : 'Ok.\n'), false);
      return;
    }
    if (url.pathname !== '/' && url.pathname !== '/query') {
      req.resume();
      send(res, req, 404, textHeaders, Buffer.from(`There is no handle ${url.pathname}\n\nUse / or /ping for health checks.\n`), false);
      return;
    }
    if (method !== 'GET' && method !== 'POST') {
      req.resume();
      send(res, req, 405, textHeaders, Buffer.from(`Method ${method} is not allowed\n`), false);
      return;
    }
    if (method === 'GET' && !url.searchParams.has('query')) {
      req.resume();
      send(res, req, 200, textHeaders, Buffer.from('Ok.\n'), false);
      return;
    }

    let parsed: ParsedRequest | undefined;
    try {
      parsed = await parseRequest(req, url);
      if (closing) throw chError(210, 'NETWORK_ERROR', 'Server is shutting down');
      const outcome = await runRequest(parsed);
      send(
        res,
        req,
        200,
        {
          ...baseHeaders(parsed.queryId),
          'Content-Type': contentTypeFor(outcome.format),
          'X-ClickHouse-Format': outcome.format,
          'X-ClickHouse-Summary': JSON.stringify(outcome.summary),
        },
        outcome.data,
        parsed.compressResponse,
      );
    } catch (err) {
      const compress = parsed?.compressResponse ?? url.searchParams.get('enable_http_compression') === '1';
      sendError(res, req, err, parsed?.queryId ?? url.searchParams.get('query_id') ?? undefined, compress);
    }
  };

  const server = createServer({ maxHeaderSize: 1024 * 1024 }, (req, res) => {
    const p = handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  });
  // The client's idle socket TTL is 2.5 s; a shorter server timeout would make
  // it reuse sockets the server already closed.
  server.keepAliveTimeout = 10_000;
  server.requestTimeout = 0;

  try {
    await new Promise<void>((resolvePromise, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, '127.0.0.1', () => {
        server.off('error', reject);
        resolvePromise();
      });
    });
  } catch (err) {
    mainSession.close();
    activeDataDir = undefined;
    throw err;
  }
  const port = (server.address() as AddressInfo).port;

  let closePromise: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closePromise ??= (async () => {
      closing = true;
      const stopped = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      await Promise.allSettled([...inFlight]);
      server.closeAllConnections();
      await stopped;
      for (const { session } of sessions.values()) session.close();
      sessions.clear();
      mainSession.close();
      await chdb.drainPending();
      rmSync(`${dataDir}.inserts`, { recursive: true, force: true });
      activeDataDir = undefined;
    })();
    return closePromise;
  };

  return { url: `http://127.0.0.1:${port}`, port, close };
}

function summary(
  readRows: number,
  readBytes: number,
  writtenRows: number,
  writtenBytes: number,
  resultRows: number,
  resultBytes: number,
  elapsedNs: string,
): Record<string, string> {
  return {
    read_rows: String(readRows),
    read_bytes: String(readBytes),
    written_rows: String(writtenRows),
    written_bytes: String(writtenBytes),
    total_rows_to_read: '0',
    result_rows: String(resultRows),
    result_bytes: String(resultBytes),
    elapsed_ns: elapsedNs,
  };
}
