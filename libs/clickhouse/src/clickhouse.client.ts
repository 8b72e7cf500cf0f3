import { randomUUID } from 'node:crypto';
import { closeSync, constants, createReadStream, ftruncateSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { Readable, Transform, pipeline } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { migrateClickHouse } from './migrator';
import { inlineParams, quoteString } from './inline-params';
import { METRICS, SpanKind, inSpan, selfTracingOn } from '@th/platform';

/** RowBinary bodies are written to the insert file this many bytes at a time (see insertRowBinaryFile). */
const ROW_BINARY_WRITE_PIECE = 4 * 1024 * 1024;

export type QueryParams = Record<string, unknown>;

export type ClickHouseTarget =
  | { kind: 'embedded'; path: string }
  | { kind: 'http'; url: string; user: string; password: string; database: string };

interface RawInserter {
  rawInsert(params: { table: string; values: Buffer; format: string; columns?: string[]; settings?: Record<string, string | number> }): Promise<unknown>;
}

/** One way in: over HTTP, the client's own connection pool; in process, one chDB connection. */
interface Lane {
  client: ClickHouseClient;
  raw: RawInserter | null;
  /** Operations under way on this lane. */
  busy: number;
}

/**
 * chDB connections opened on the engine's directory. Each runs one statement at a time, and
 * connections to the same directory share the engine and its data but run side by side: the writer's
 * inserts, its lookups and the readers' queries then use both cores instead of queueing.
 */
const EMBEDDED_LANES = 3;

/** In process, query outputs are written beside the engine's directory under this infix (see queryStream). */
const OUTPUT_INFIX = '.out-';

/** Output files a killed process left behind: chDB binds a data directory to one process, so none is in use at connect. */
function removeStaleOutputs(path: string): void {
  const prefix = `${basename(path)}${OUTPUT_INFIX}`;
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // no parent directory yet: nothing was written there
    throw err;
  }
  for (const name of names) if (name.startsWith(prefix)) rmSync(join(dirname(path), name), { force: true });
}

const PARQUET_MAGIC = Buffer.from('PAR1');

/**
 * Passes a Parquet response through and fails it unless it ends with the format's closing magic. A server
 * that fails a query after it has begun answering appends the error text and ends the response: without
 * this, a cut or error-tailed file would pass for a whole one.
 */
export function wholeParquet(): Transform {
  let head = Buffer.alloc(0);
  let tail = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (head.length < 4) head = Buffer.concat([head, chunk]).subarray(0, 4);
      tail = Buffer.concat([tail, chunk.subarray(-4)]).subarray(-4);
      done(null, chunk);
    },
    flush(done) {
      const whole = head.equals(PARQUET_MAGIC) && tail.equals(PARQUET_MAGIC);
      done(whole ? null : new Error(`ClickHouse's Parquet output is not a whole file (it ends with ${JSON.stringify(tail.toString('latin1'))})`));
    },
  });
}

/**
 * The one ClickHouse surface the services use: the same SQL over HTTP (cluster) or against the
 * engine in process through chDB (standalone). Queries always take typed parameters.
 */
export class ClickHouse {
  /** In process: RowBinary inserts, one at a time (they share one file). */
  private binaryTail: Promise<unknown> = Promise.resolve();
  /** In process: the file RowBinary bodies are written to (see insertRowBinaryFile), open once used. */
  private binaryFd: number | null = null;

  private constructor(
    private readonly lanes: Lane[],
    readonly target: ClickHouseTarget,
  ) {}

  /** The least busy lane, held for the duration of `fn` (timed as a statement of `kind`). */
  private on<T>(kind: 'query' | 'command' | 'insert' | 'ping', fn: (lane: Lane) => Promise<T>): Promise<T> {
    // Self-tracing on: a CLIENT span per statement (health pings excepted).
    if (kind === 'ping' || !selfTracingOn()) return this.onLane(kind, fn);
    return inSpan(`clickhouse ${kind}`, { 'db.system.name': 'clickhouse' }, () => this.onLane(kind, fn), SpanKind.CLIENT);
  }

  private async onLane<T>(kind: 'query' | 'command' | 'insert' | 'ping', fn: (lane: Lane) => Promise<T>): Promise<T> {
    let lane = this.lanes[0];
    for (const l of this.lanes) if (l.busy < lane.busy) lane = l;
    lane.busy++;
    METRICS.clickhouseInFlight.inc();
    const end = METRICS.clickhouseQueryDuration.startTimer({ kind });
    let outcome = 'error';
    try {
      const out = await fn(lane);
      outcome = 'ok';
      return out;
    } finally {
      end({ outcome });
      METRICS.clickhouseInFlight.dec();
      lane.busy--;
    }
  }

  /** The HTTP form from the shared CLICKHOUSE_* settings, migrated and ready. */
  static async fromConfig(c: { CLICKHOUSE_URL: string; CLICKHOUSE_USER: string; CLICKHOUSE_PASSWORD: string; CLICKHOUSE_DATABASE: string }): Promise<ClickHouse> {
    const ch = ClickHouse.connect({ kind: 'http', url: c.CLICKHOUSE_URL, user: c.CLICKHOUSE_USER, password: c.CLICKHOUSE_PASSWORD, database: c.CLICKHOUSE_DATABASE });
    await migrateClickHouse(ch);
    return ch;
  }

  static connect(target: ClickHouseTarget): ClickHouse {
    if (target.kind === 'http') {
      const client = createClient({
        url: target.url,
        username: target.user,
        password: target.password,
        database: target.database,
        request_timeout: 120_000,
        max_open_connections: 20,
        clickhouse_settings: { date_time_output_format: 'iso', output_format_json_quote_64bit_integers: 0 },
      });
      return new ClickHouse([{ client, raw: null, busy: 0 }], target);
    }
    removeStaleOutputs(target.path);
    // chDB binds one data directory per process; loaded lazily so cluster services never load the engine.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { createChdbConnection } = require('chdb/connection') as typeof import('chdb/connection');
    const lanes: Lane[] = [];
    for (let i = 0; i < EMBEDDED_LANES; i++) {
      const connection = createChdbConnection({ path: target.path });
      const client = createClient({ connection } as unknown as Parameters<typeof createClient>[0]);
      lanes.push({ client, raw: (connection as unknown as { chdb: RawInserter }).chdb, busy: 0 });
    }
    return new ClickHouse(lanes, target);
  }

  /** In process, parameters go in as typed literals: chDB would run parameterized queries one at a time. */
  private bound(lane: Lane, sql: string, params: QueryParams): { query: string; query_params: QueryParams } {
    return lane.raw !== null ? { query: inlineParams(sql, params), query_params: {} } : { query: sql, query_params: params };
  }

  async query<T>(sql: string, params: QueryParams = {}, settings: Record<string, string | number> = {}): Promise<T[]> {
    return this.on('query', async (lane) => {
      const rs = await lane.client.query({
        ...this.bound(lane, sql, params),
        format: 'JSONEachRow',
        clickhouse_settings: { date_time_output_format: 'iso', output_format_json_quote_64bit_integers: 0, ...settings },
      });
      return (await rs.json()) as T[];
    });
  }

  /**
   * A query's result as a byte stream in a binary `format` (Parquet), for results too large to hold.
   * Over HTTP the server's response streams through with back-pressure. In process chDB returns a
   * result only whole, so the engine writes it to a file beside its data directory, which the stream
   * reads (the path is removed as soon as it is open): memory stays flat whatever the result's size. `settings` go in the
   * query's SETTINGS clause (in process, `clickhouse_settings` would be SET on the shared connection).
   */
  async queryStream(sql: string, params: QueryParams, format: 'Parquet', settings: Record<string, string | number> = {}, signal?: AbortSignal): Promise<Readable> {
    const set = Object.entries(settings).map(([k, v]) => `${k} = ${typeof v === 'number' ? v : quoteString(v)}`);
    const query = set.length > 0 ? `${sql}\nSETTINGS ${set.join(', ')}` : sql;
    const target = this.target;
    if (target.kind === 'http') {
      // exec, not query(): a ResultSet's stream() splits its bytes into text rows at newlines, which breaks binary output.
      return this.on('query', async (lane) => {
        const { stream } = await lane.client.exec({ query: `${query}\nFORMAT ${format}`, query_params: params, abort_signal: signal });
        return pipeline(stream, wholeParquet(), () => undefined);
      });
    }
    const file = `${target.path}${OUTPUT_INFIX}${randomUUID()}.${format.toLowerCase()}`;
    try {
      // Not abortable half-way: the engine would go on writing the file after the call had given up on it.
      await this.on('query', (lane) => lane.client.command({ query: `INSERT INTO FUNCTION file(${quoteString(file)}, ${format}) ${inlineParams(query, params)}` }));
      signal?.throwIfAborted();
    } catch (err) {
      rmSync(file, { force: true });
      throw err;
    }
    // Opened, then unlinked at once: the stream reads it through its descriptor, and no path is left behind
    // whether or not the stream is ever read or closed.
    const fd = openSync(file, constants.O_RDONLY);
    rmSync(file, { force: true });
    return createReadStream('', { fd, autoClose: true });
  }

  async command(sql: string, params: QueryParams = {}, settings: Record<string, string | number> = {}): Promise<void> {
    await this.on('command', (lane) => lane.client.command({ ...this.bound(lane, sql, params), clickhouse_settings: settings }));
  }

  /** Inserts a pre-serialized JSONEachRow body: the engine parses it, not Node. */
  async insertJsonEachRow(table: string, body: Buffer, settings: Record<string, string | number> = {}): Promise<void> {
    await this.insertRaw(table, 'JSONEachRow', null, body, settings);
  }

  /**
   * Inserts a pre-serialized JSONCompactEachRow body: one JSON array of values per line, in the order
   * of `columns`. Cheaper for the engine to parse than JSONEachRow (no key names to match per row).
   */
  async insertJsonCompactEachRow(table: string, columns: readonly string[], body: Buffer, settings: Record<string, string | number> = {}): Promise<void> {
    await this.insertRaw(table, 'JSONCompactEachRow', columns, body, settings);
  }

  /**
   * Inserts a RowBinary body (see RowBinaryBuffer) holding values of `columns` in that order. The
   * cheapest form for the engine to read: no text to parse.
   */
  async insertRowBinary(table: string, columns: readonly string[], body: Buffer, settings: Record<string, string | number> = {}): Promise<void> {
    if (body.length === 0) return;
    const target = this.target;
    if (target.kind === 'embedded') {
      const run = this.binaryTail.then(() => this.insertRowBinaryFile(target.path, table, columns, body, settings));
      this.binaryTail = run.catch(() => undefined);
      return run;
    }
    await this.on('insert', async ({ client }) => {
      const rs = await client.exec({
        query: `INSERT INTO ${table} (${columns.join(', ')}) FORMAT RowBinary`,
        values: Readable.from([body], { objectMode: false }),
        clickhouse_settings: settings,
      });
      rs.stream.resume();
    });
  }

  /**
   * In process, a RowBinary body is read from a file: chDB's insert with inline data ends the data at
   * the first empty line ("\n\n", which binary values hold at random: a run id did), and its raw
   * insert refuses binary formats for that reason. One file per engine directory, written over by each
   * insert (no new file, so no inode to allocate per insert), read by `INSERT ... FROM INFILE`: 1 ms
   * less per insert than `INSERT ... SELECT FROM file()` (chDB, 20-row inserts: 2.7 against 3.6 ms).
   */
  private async insertRowBinaryFile(path: string, table: string, columns: readonly string[], body: Buffer, settings: Record<string, string | number>): Promise<void> {
    const file = `${path}.rowbinary`;
    const fd = (this.binaryFd ??= openSync(file, constants.O_WRONLY | constants.O_CREAT, 0o600));
    // Written over in place, then cut to length: truncating first freed all its blocks for the write to
    // allocate again (2.5 ms per 3 MB body on the test machine, against 0.4 ms in place). Synchronous
    // on purpose: chDB runs its statements on libuv's four threads, and an asynchronous write waited
    // behind them (in bench/ingest the machine then sat idle a quarter of the time).
    // A large body is written a piece at a time with the event loop given way between (one 25 MB write held it
    // for tens of milliseconds); the inserts are chained (binaryTail), so no other write comes in between.
    for (let at = 0; at < body.length; at += ROW_BINARY_WRITE_PIECE) {
      if (at > 0) await nextTurn();
      writeSync(fd, body, at, Math.min(ROW_BINARY_WRITE_PIECE, body.length - at), at);
    }
    ftruncateSync(fd, body.length);
    const set = Object.entries(settings).map(([k, v]) => `${k} = ${typeof v === 'number' ? v : quoteString(v)}`);
    await this.command(`INSERT INTO ${table} (${columns.join(', ')}) FROM INFILE ${quoteString(file)}${set.length > 0 ? ` SETTINGS ${set.join(', ')}` : ''} FORMAT RowBinary`);
  }

  private async insertRaw(table: string, format: string, columns: readonly string[] | null, body: Buffer, settings: Record<string, string | number>): Promise<void> {
    if (body.length === 0) return;
    await this.on('insert', async ({ client, raw }) => {
      if (raw) {
        await raw.rawInsert({ table, values: body, format, settings, ...(columns ? { columns: [...columns] } : {}) });
        return;
      }
      const rs = await client.exec({
        query: `INSERT INTO ${table}${columns ? ` (${columns.join(', ')})` : ''} FORMAT ${format}`,
        values: Readable.from([body], { objectMode: false }),
        clickhouse_settings: settings,
      });
      rs.stream.resume();
    });
  }

  async ping(): Promise<void> {
    const r = await this.on('ping', (lane) => lane.client.ping());
    if (!r.success) throw r.error;
  }

  async close(): Promise<void> {
    await Promise.all(this.lanes.map((l) => l.client.close()));
    await this.binaryTail;
    if (this.binaryFd !== null) {
      closeSync(this.binaryFd);
      if (this.target.kind === 'embedded') rmSync(`${this.target.path}.rowbinary`, { force: true });
    }
    this.binaryFd = null;
  }
}
