import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ClickHouse } from '@th/clickhouse';
import type { ExportField } from '@th/contracts';
import type { OutboundPolicy } from '@th/platform';
import type { ExportsRepository, JobRow } from '../exports.repository';
import type { CredentialsCipher } from '../storage/credentials-cipher';
import { objectStoreFor, type ObjectStore } from '../storage/object-store';
import { FIELD_SQL, exportFieldsOf, parquetOutputSettings, type ParquetCompression } from '../writer/run-parquet';
import { compileExportFilter } from './run-filter';

export interface ExportRunnerOptions {
  /** Rows per Parquet file at most (a file also ends where the day changes). */
  rowsPerFile: number;
  /** Rows per Parquet row group at most (the engine holds one row group in memory while it writes). */
  rowGroupRows: number;
  /** Bytes per Parquet row group at most, before compression. */
  rowGroupBytes: number;
  leaseMs: number;
  /** Parquet page compression. */
  compression: ParquetCompression;
  /** Every connection to a destination goes through it (a destination's name may resolve elsewhere since it was saved). */
  outbound: OutboundPolicy;
}

/** Why a run stopped without finishing: the job was cancelled, timed out or taken by another worker, or the worker is stopping. */
export class ExportInterrupted extends Error {}

/** The sorting-key position of a run: files and the job's cursor end at one. */
interface Key {
  t_us: string;
  id: string;
}

/** One file to write: the runs after the previous file's last key up to `last`, all of one day. */
interface PlannedFile {
  day: string;
  rows: number;
  last: Key;
}

/** The files of one UTC day (none when its runs are all deleted or filtered out), and the key its range ends at. */
interface PlannedDay {
  files: PlannedFile[];
  end: Key;
}

/** A planned file whose query has been sent: `source` is the engine's Parquet output. */
interface OpenedFile {
  file: PlannedFile;
  source: Promise<Readable>;
}

const MAX_UUID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
const DAY_US = 86_400_000_000n;

/**
 * Runs one export. The engine writes the Parquet: a planning query per UTC day (keys only) splits the rest of the
 * job's window (after its cursor) into files of at most `rowsPerFile` runs of that day, by sorting key; each file
 * is one `SELECT ... FORMAT Parquet` over its key range, streamed to the bucket with a multipart upload, and
 * committed with the cursor at its last key. Days are planned one ahead of the files being written, so the first
 * file starts after one day's planning. A restarted run plans again from the last committed file and numbers
 * files on from it, so a file uploaded but not committed is overwritten under the same name, never duplicated,
 * and no run is skipped.
 */
export class ExportRunner {
  constructor(
    private readonly ch: ClickHouse,
    private readonly repo: ExportsRepository,
    private readonly cipher: CredentialsCipher,
    private readonly opts: ExportRunnerOptions,
  ) {}

  async run(job: JobRow, owner: string, signal: AbortSignal): Promise<void> {
    const dest = await this.repo.destinationOf(job);
    if (!dest) throw new Error(`Destination ${job.destination_id} no longer exists`);
    const store = objectStoreFor(dest, this.cipher.decrypt(dest.credentials_enc), this.opts.outbound);
    try {
      await this.export(job, owner, store, signal);
    } finally {
      store.close();
    }
  }

  private async export(job: JobRow, owner: string, store: ObjectStore, signal: AbortSignal): Promise<void> {
    const fields = exportFieldsOf(job.export_fields);
    const cursor: Key = { t_us: job.cursor_us ?? (BigInt(job.start_us) - 1n).toString(), id: job.cursor_id ?? MAX_UUID };
    let seq = job.files_written;
    await this.stillHeld(job, owner, signal);
    const plan = this.planFiles(job, cursor);
    const stop = new AbortController();
    const onStop = () => stop.abort();
    signal.addEventListener('abort', onStop, { once: true });
    const open = async (from: Key): Promise<OpenedFile | null> => {
      const step = await plan.next();
      if (step.done) return null;
      stop.signal.throwIfAborted(); // planned while the export stopped: send no query the engine would write in vain
      const { sql, params } = this.rangeQuery(job, fields, from, step.value.last);
      const source = this.ch.queryStream(sql, params, 'Parquet', parquetOutputSettings(this.opts), stop.signal);
      source.catch(() => undefined); // awaited in turn; this only keeps an abandoned read-ahead from being an unhandled rejection
      return { file: step.value, source };
    };
    // The engine writes file n+1 while file n uploads; files are still committed one by one, in order.
    let next = open(cursor);
    next.catch(() => undefined);
    try {
      for (let current = await next; current; current = await next) {
        const { file, source } = current;
        next = open(file.last);
        next.catch(() => undefined);
        await this.stillHeld(job, owner, signal);
        seq += 1;
        const [y, m, d] = file.day.split('-');
        const key = store.key(
          `export_id=${job.id}/tenant_id=${job.tenant_id}/session_id=${job.session_id}/runs/year=${y}/month=${m}/day=${d}/part-${String(seq).padStart(6, '0')}.parquet`,
        );
        const bytes = await this.upload(source, store, key, stop.signal);
        const committed = await this.repo.commitFile(job.id, owner, { seq, key, rows: file.rows, bytes, cursor_us: file.last.t_us, cursor_id: file.last.id });
        if (!committed) throw new ExportInterrupted('the export is no longer held by this worker');
      }
    } catch (err) {
      stop.abort();
      await next.then((n) => n?.source.then((s) => s.destroy(), () => undefined), () => undefined);
      throw signal.aborted && !(err instanceof ExportInterrupted) ? new ExportInterrupted('worker stopping') : err;
    } finally {
      signal.removeEventListener('abort', onStop);
      await plan.return().catch(() => undefined); // lets a day planned ahead finish before the export's store and lease go
    }
  }

  /** Extends the lease before each file; a cancelled, timed-out or taken export stops here. */
  private async stillHeld(job: JobRow, owner: string, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw new ExportInterrupted('worker stopping');
    if (!(await this.repo.heartbeat(job.id, owner, this.opts.leaseMs))) throw new ExportInterrupted('the export is no longer held by this worker');
  }

  /** Streams one file of the engine's Parquet output into one object with a multipart upload; returns its size in bytes. */
  private async upload(opening: Promise<Readable>, store: ObjectStore, key: string, signal: AbortSignal): Promise<number> {
    let bytes = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        done(null, chunk);
      },
    });
    const uploadAbort = new AbortController();
    const onStop = () => uploadAbort.abort();
    signal.addEventListener('abort', onStop, { once: true });
    const uploaded = store.upload(key, counted, uploadAbort.signal);
    uploaded.catch(() => undefined); // awaited below; an upload abandoned after a failed query must not be an unhandled rejection
    let source: Readable | null = null;
    try {
      source = await opening;
      await Promise.all([pipeline(source, counted), uploaded]);
      return bytes;
    } catch (err) {
      uploadAbort.abort();
      source?.destroy();
      counted.destroy();
      await uploaded.catch(() => undefined);
      throw err;
    } finally {
      signal.removeEventListener('abort', onStop);
    }
  }

  /**
   * The job's window, tenant, project and key range, newest version only (FINAL, tombstones dropped), and
   * its filter (the same compiler as POST /runs/query) applied to the newest version, outside FINAL.
   * The range is also bounded on start_time alone: the primary index prunes with that, not with the tuple.
   */
  private liveRuns(job: JobRow, from: Key, to: Key | null): { sql: string; params: Record<string, unknown> } {
    const filter = job.filter ? compileExportFilter(job.filter) : null;
    return {
      sql: `SELECT * FROM (
         SELECT * FROM runs FINAL
         WHERE tenant_id = {tenant:UUID} AND session_id = {session:UUID}
           AND start_time >= fromUnixTimestamp64Micro({start:Int64}, 'UTC') AND start_time < fromUnixTimestamp64Micro({end:Int64}, 'UTC')
           AND start_time >= fromUnixTimestamp64Micro({from_t:Int64}, 'UTC') AND (start_time, id) > (fromUnixTimestamp64Micro({from_t:Int64}, 'UTC'), {from_id:UUID})${
             to
               ? `\n           AND start_time <= fromUnixTimestamp64Micro({to_t:Int64}, 'UTC') AND (start_time, id) <= (fromUnixTimestamp64Micro({to_t:Int64}, 'UTC'), {to_id:UUID})`
               : ''
           }
       )
       WHERE is_deleted = 0${filter ? ` AND (${filter.sql})` : ''}`,
      params: {
        ...(filter?.params ?? {}),
        tenant: job.tenant_id,
        session: job.session_id,
        start: job.start_us,
        end: job.end_us,
        from_t: from.t_us,
        from_id: from.id,
        ...(to ? { to_t: to.t_us, to_id: to.id } : {}),
      },
    };
  }

  /**
   * The files of the rest of the window, in key order: each at most `rowsPerFile` runs, all of one UTC day.
   * The next day is planned while this day's files are written.
   */
  private async *planFiles(job: JobRow, from: Key): AsyncGenerator<PlannedFile, void, undefined> {
    let ahead = this.planDay(job, from);
    try {
      for (let day = await ahead; day; day = await ahead) {
        ahead = this.planDay(job, day.end);
        ahead.catch(() => undefined); // awaited in turn, or below when the export stops first
        yield* day.files;
      }
    } finally {
      await ahead.catch(() => undefined);
    }
  }

  /**
   * The day of the first stored key after `after` (any version: a cheap read in sorting-key order), and that
   * day's files: one pass over its newest versions' keys numbers them in order and keeps every `rowsPerFile`-th
   * and the last (the engine holds the day's keys, some 50 bytes a run at the peak). Null past the window's last run.
   */
  private async planDay(job: JobRow, after: Key): Promise<PlannedDay | null> {
    const [first] = await this.ch.query<{ t_us: string }>(
      `SELECT toString(toUnixTimestamp64Micro(start_time)) AS t_us FROM runs
       WHERE tenant_id = {tenant:UUID} AND session_id = {session:UUID}
         AND start_time < fromUnixTimestamp64Micro({end:Int64}, 'UTC')
         AND start_time >= fromUnixTimestamp64Micro({from_t:Int64}, 'UTC') AND (start_time, id) > (fromUnixTimestamp64Micro({from_t:Int64}, 'UTC'), {from_id:UUID})
       ORDER BY start_time, id
       LIMIT 1`,
      { tenant: job.tenant_id, session: job.session_id, end: job.end_us, from_t: after.t_us, from_id: after.id },
    );
    if (!first) return null;
    const t = BigInt(first.t_us);
    const dayStart = t - (((t % DAY_US) + DAY_US) % DAY_US);
    const end: Key = { t_us: (dayStart + DAY_US - 1n).toString(), id: MAX_UUID };
    const range = this.liveRuns(job, after, end);
    const ends = await this.ch.query<{ day: string; t_us: string; id: string; n: number | string }>(
      `SELECT toString(toDate(k_t)) AS day, toString(toUnixTimestamp64Micro(k_t)) AS t_us, toString(k_id) AS id, n FROM (
         SELECT start_time AS k_t, id AS k_id, row_number() OVER (ORDER BY start_time, id) AS n, count() OVER () AS total FROM (${range.sql})
       )
       WHERE n % {per:UInt64} = 0 OR n = total
       ORDER BY n`,
      { ...range.params, per: this.opts.rowsPerFile },
    );
    const files: PlannedFile[] = [];
    let before = 0;
    for (const e of ends) {
      files.push({ day: e.day, rows: Number(e.n) - before, last: { t_us: e.t_us, id: e.id } });
      before = Number(e.n);
    }
    return { files, end };
  }

  /** One file's rows, in key order, as the exported fields. */
  private rangeQuery(job: JobRow, fields: readonly ExportField[], from: Key, to: Key): { sql: string; params: Record<string, unknown> } {
    const live = this.liveRuns(job, from, to);
    // Computed under other names and renamed outside: an alias equal to its column's name would shadow it inside the expressions.
    return {
      sql: `SELECT ${fields.map((f) => `x_${f} AS ${f}`).join(', ')}
       FROM (SELECT ${fields.map((f) => `${FIELD_SQL[f]} AS x_${f}`).join(', ')}, start_time AS x_sort_t, id AS x_sort_id FROM (${live.sql}))
       ORDER BY x_sort_t, x_sort_id`,
      params: live.params,
    };
  }
}
