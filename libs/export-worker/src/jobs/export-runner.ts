import { PassThrough } from 'node:stream';
import { ParquetWriter } from '@dsnp/parquetjs';
import { ClickHouse } from '@th/clickhouse';
import type { ExportField } from '@th/contracts';
import type { OutboundPolicy } from '@th/platform';
import type { ExportsRepository, JobRow } from '../exports.repository';
import type { CredentialsCipher } from '../storage/credentials-cipher';
import { objectStoreFor, type ObjectStore } from '../storage/object-store';
import { FIELD_SQL, exportFieldsOf, parquetSchemaFor, toParquetRow, type ParquetCompression } from '../writer/run-parquet';
import { compileExportFilter } from './run-filter';

export interface ExportRunnerOptions {
  /** Rows read from ClickHouse per query: bounds the worker's memory whatever the export's size. */
  chunkRows: number;
  /** Rows per Parquet file at most (a file also ends where the day changes). */
  rowsPerFile: number;
  /** Rows per Parquet row group (buffered in memory by the writer). */
  rowGroupRows: number;
  leaseMs: number;
  /** Parquet page compression. */
  compression: ParquetCompression;
  /** Every connection to a destination goes through it (a destination's name may resolve elsewhere since it was saved). */
  outbound: OutboundPolicy;
}

/** Why a run stopped without finishing: the job was cancelled, timed out or taken by another worker, or the worker is stopping. */
export class ExportInterrupted extends Error {}

interface ChunkRow {
  row: Record<string, unknown>;
  t_us: string;
  id: string;
  day: string;
}

const MAX_UUID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';

/**
 * Runs one export: streams the window's newest run versions out of ClickHouse in key order and in
 * bounded chunks, writes day-partitioned Parquet files, uploads each with a multipart upload, and
 * commits the cursor after each file. A restarted run continues after the last committed file with
 * the same file numbers, so a file uploaded but not committed is overwritten, never duplicated.
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
    const schema = parquetSchemaFor(fields, this.opts.compression);
    let cursor = { t_us: job.cursor_us ?? (BigInt(job.start_us) - 1n).toString(), id: job.cursor_id ?? MAX_UUID };
    let seq = job.files_written;
    let pending: ChunkRow[] = [];
    let at = 0;
    // One chunk is read ahead while the current one is written: ClickHouse and the writer overlap, memory holds two chunks.
    const readFrom = (from: { t_us: string; id: string }) => {
      const p = this.readChunk(job, fields, from);
      p.catch(() => undefined); // awaited below; this only keeps an abandoned read-ahead from being an unhandled rejection
      return p;
    };
    let ahead: ReturnType<typeof readFrom> | null = readFrom(cursor);

    const next = async (): Promise<ChunkRow | null> => {
      while (at >= pending.length && ahead) {
        const chunk = await ahead;
        ahead = null;
        if (chunk.last) cursor = chunk.last;
        if (!chunk.done) ahead = readFrom(cursor);
        pending = chunk.rows;
        at = 0;
      }
      return at < pending.length ? pending[at++] : null;
    };

    let first = await next();
    while (first) {
      if (signal.aborted) throw new ExportInterrupted('worker stopping');
      seq += 1;
      const day = first.day;
      const [y, m, d] = day.split('-');
      const key = store.key(
        `export_id=${job.id}/tenant_id=${job.tenant_id}/session_id=${job.session_id}/runs/year=${y}/month=${m}/day=${d}/part-${String(seq).padStart(6, '0')}.parquet`,
      );
      const body = new PassThrough();
      let bytes = 0;
      body.on('data', (c: Buffer) => (bytes += c.length));
      const uploadAbort = new AbortController();
      const onStop = () => uploadAbort.abort();
      signal.addEventListener('abort', onStop, { once: true });
      const uploaded = store.upload(key, body, uploadAbort.signal);
      let rows = 0;
      let last: ChunkRow = first;
      try {
        // No page index: parquetjs counts list values instead of rows in it, which strict readers (ClickHouse) reject.
        const writer = await ParquetWriter.openStream(schema, body as unknown as Parameters<typeof ParquetWriter.openStream>[1], { pageIndex: false });
        writer.setRowGroupSize(this.opts.rowGroupRows);
        let row: ChunkRow | null = first;
        while (row && row.day === day && rows < this.opts.rowsPerFile) {
          await writer.appendRow(toParquetRow(row.row, fields));
          rows += 1;
          last = row;
          row = await next();
          if (rows % this.opts.chunkRows === 0 && !(await this.repo.heartbeat(job.id, owner, this.opts.leaseMs))) {
            throw new ExportInterrupted('the export is no longer held by this worker');
          }
        }
        first = row;
        await writer.close();
        await uploaded;
      } catch (err) {
        uploadAbort.abort();
        body.destroy();
        await uploaded.catch(() => undefined);
        throw signal.aborted && !(err instanceof ExportInterrupted) ? new ExportInterrupted('worker stopping') : err;
      } finally {
        signal.removeEventListener('abort', onStop);
      }
      const committed = await this.repo.commitFile(job.id, owner, { seq, key, rows, bytes, cursor_us: last.t_us, cursor_id: last.id });
      if (!committed) throw new ExportInterrupted('the export is no longer held by this worker');
    }
  }

  /**
   * The next rows after the cursor, newest version only (FINAL, tombstones dropped), in sorting-key order,
   * that match the export's filter. The filter is compiled into the query (the same compiler as POST
   * /runs/query) and applied to the newest version, outside the FINAL subquery. `last` is the key of the
   * last row returned; `done` when the window holds nothing further.
   */
  private async readChunk(
    job: JobRow,
    fields: readonly ExportField[],
    cursor: { t_us: string; id: string },
  ): Promise<{ rows: ChunkRow[]; last: { t_us: string; id: string } | null; done: boolean }> {
    const cols = fields.map((f) => `${FIELD_SQL[f]} AS f_${f}`).join(', ');
    const filter = job.filter ? compileExportFilter(job.filter) : null;
    const raw = await this.ch.query<Record<string, unknown>>(
      `SELECT ${cols}, toString(toUnixTimestamp64Micro(start_time)) AS _t_us, toString(id) AS _id, toString(toDate(start_time)) AS _day
       FROM (
         SELECT * FROM runs FINAL
         WHERE tenant_id = {tenant:UUID} AND session_id = {session:UUID}
           AND start_time >= fromUnixTimestamp64Micro({start:Int64}, 'UTC') AND start_time < fromUnixTimestamp64Micro({end:Int64}, 'UTC')
           AND (start_time, id) > (fromUnixTimestamp64Micro({cur_t:Int64}, 'UTC'), {cur_id:UUID})
       )
       WHERE is_deleted = 0${filter ? ` AND (${filter.sql})` : ''}
       ORDER BY start_time, id
       LIMIT {n:UInt32}`,
      {
        ...(filter?.params ?? {}),
        tenant: job.tenant_id,
        session: job.session_id,
        start: job.start_us,
        end: job.end_us,
        cur_t: cursor.t_us,
        cur_id: cursor.id,
        n: this.opts.chunkRows,
      },
    );
    if (raw.length === 0) return { rows: [], last: null, done: true };
    const tail = raw[raw.length - 1];
    const last = { t_us: String(tail._t_us), id: String(tail._id) };
    const rows = raw.map((r) => {
      const row: Record<string, unknown> = {};
      for (const f of fields) row[f] = r[`f_${f}`];
      return { row, t_us: String(r._t_us), id: String(r._id), day: String(r._day) };
    });
    return { rows, last, done: raw.length < this.opts.chunkRows };
  }
}
