import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import type { ExportField, ExportStatus, Identity, TenantScope } from '@th/contracts';
import { METRICS } from '@th/platform';

export interface DestinationRow {
  id: string;
  tenant_id: string;
  destination_type: 'objstore' | 's3';
  display_name: string;
  bucket_name: string;
  prefix: string;
  region: string | null;
  endpoint_url: string | null;
  credentials_enc: string;
  credentials_keys: string[];
  created_at: Date;
  updated_at: Date;
}

export interface JobRow {
  id: string;
  tenant_id: string;
  organization_id: string;
  destination_id: string;
  session_id: string;
  start_time: string;
  end_time: string | null;
  start_us: string;
  end_us: string | null;
  interval_hours: number | null;
  filter: string | null;
  export_fields: ExportField[] | null;
  format_version: string;
  status: ExportStatus;
  source_bulk_export_id: string | null;
  window_index: number | null;
  next_window: number;
  identity: Identity;
  run_after: Date;
  rows_written: string;
  files_written: number;
  cursor_us: string | null;
  cursor_id: string | null;
  lease_owner: string | null;
  lease_until: Date | null;
  attempts: number;
  error: string | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

export type NewJob = Pick<
  JobRow,
  | 'tenant_id'
  | 'organization_id'
  | 'destination_id'
  | 'session_id'
  | 'start_time'
  | 'end_time'
  | 'start_us'
  | 'end_us'
  | 'interval_hours'
  | 'filter'
  | 'export_fields'
  | 'format_version'
  | 'identity'
> & { source_bulk_export_id?: string | null; window_index?: number | null; run_after?: Date };

const JOB_COLUMNS = `id, tenant_id, organization_id, destination_id, session_id, start_time, end_time, start_us, end_us, interval_hours, filter,
  export_fields, format_version, status, source_bulk_export_id, window_index, next_window, identity, run_after, rows_written, files_written,
  cursor_us, cursor_id, lease_owner, lease_until, attempts, error, created_at, updated_at, started_at, finished_at`;

/** The only code that speaks SQL to the `exports` schema. Reads and writes of the API are bound to a tenant. */
export class ExportsRepository {
  constructor(private readonly ds: DataSource) {}

  // ---- destinations

  async insertDestination(d: Omit<DestinationRow, 'created_at' | 'updated_at'>): Promise<DestinationRow> {
    const rows = (await this.ds.query(
      `INSERT INTO "exports"."destinations" (id, tenant_id, destination_type, display_name, bucket_name, prefix, region, endpoint_url, credentials_enc, credentials_keys)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) RETURNING *`,
      [d.id, d.tenant_id, d.destination_type, d.display_name, d.bucket_name, d.prefix, d.region, d.endpoint_url, d.credentials_enc, JSON.stringify(d.credentials_keys)],
    )) as DestinationRow[];
    return rows[0];
  }

  async findDestination(scope: TenantScope, id: string): Promise<DestinationRow | null> {
    const rows = (await this.ds.query(`SELECT * FROM "exports"."destinations" WHERE tenant_id = $1 AND id = $2`, [scope.tenant_id, id])) as DestinationRow[];
    return rows[0] ?? null;
  }

  async listDestinations(scope: TenantScope, page: { limit: number; offset: number }): Promise<DestinationRow[]> {
    return (await this.ds.query(`SELECT * FROM "exports"."destinations" WHERE tenant_id = $1 ORDER BY created_at DESC, id LIMIT $2 OFFSET $3`, [
      scope.tenant_id,
      page.limit,
      page.offset,
    ])) as DestinationRow[];
  }

  async updateDestination(scope: TenantScope, d: DestinationRow): Promise<DestinationRow | null> {
    const rows = (await this.ds.query(
      `UPDATE "exports"."destinations" SET display_name = $3, bucket_name = $4, prefix = $5, region = $6, endpoint_url = $7, credentials_enc = $8,
         credentials_keys = $9, updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      [scope.tenant_id, d.id, d.display_name, d.bucket_name, d.prefix, d.region, d.endpoint_url, d.credentials_enc, JSON.stringify(d.credentials_keys)],
    )) as [DestinationRow[], number] | DestinationRow[];
    const list = Array.isArray(rows[0]) ? (rows[0] as DestinationRow[]) : (rows as DestinationRow[]);
    return list[0] ?? null;
  }

  /** For the worker: a job's destination, bound to the job's tenant. */
  destinationOf(job: JobRow): Promise<DestinationRow | null> {
    return this.findDestination(job, job.destination_id);
  }

  // ---- jobs

  async insertJob(job: NewJob, m: EntityManager | DataSource = this.ds): Promise<JobRow | null> {
    const rows = (await m.query(
      `INSERT INTO "exports"."jobs" (id, tenant_id, organization_id, destination_id, session_id, start_time, end_time, start_us, end_us, interval_hours,
         filter, export_fields, format_version, status, source_bulk_export_id, window_index, identity, run_after)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,'CREATED',$14,$15,$16,$17)
       ON CONFLICT (source_bulk_export_id, window_index) DO NOTHING
       RETURNING ${JOB_COLUMNS}`,
      [
        randomUUID(),
        job.tenant_id,
        job.organization_id,
        job.destination_id,
        job.session_id,
        job.start_time,
        job.end_time,
        job.start_us,
        job.end_us,
        job.interval_hours,
        job.filter,
        job.export_fields === null ? null : JSON.stringify(job.export_fields),
        job.format_version,
        job.source_bulk_export_id ?? null,
        job.window_index ?? null,
        JSON.stringify(job.identity),
        job.run_after ?? new Date(),
      ],
    )) as JobRow[];
    return rows[0] ?? null;
  }

  async findJob(scope: TenantScope, id: string): Promise<JobRow | null> {
    const rows = (await this.ds.query(`SELECT ${JOB_COLUMNS} FROM "exports"."jobs" WHERE tenant_id = $1 AND id = $2`, [scope.tenant_id, id])) as JobRow[];
    return rows[0] ?? null;
  }

  async listJobs(scope: TenantScope, page: { limit: number; offset: number }, source?: string): Promise<JobRow[]> {
    const bySource = source !== undefined;
    return (await this.ds.query(
      `SELECT ${JOB_COLUMNS} FROM "exports"."jobs" WHERE tenant_id = $1 ${bySource ? 'AND source_bulk_export_id = $4' : ''}
       ORDER BY ${bySource ? 'window_index DESC' : 'created_at DESC'}, id LIMIT $2 OFFSET $3`,
      bySource ? [scope.tenant_id, page.limit, page.offset, source] : [scope.tenant_id, page.limit, page.offset],
    )) as JobRow[];
  }

  /** CREATED or RUNNING → CANCELLED; returns the job after the change, or null when it was not cancellable. */
  async cancel(scope: TenantScope, id: string): Promise<JobRow | null> {
    const rows = (await this.ds.query(
      `UPDATE "exports"."jobs" SET status = 'CANCELLED', finished_at = now(), updated_at = now(), lease_owner = NULL, lease_until = NULL
       WHERE tenant_id = $1 AND id = $2 AND status IN ('CREATED', 'RUNNING') RETURNING ${JOB_COLUMNS}`,
      [scope.tenant_id, id],
    )) as [JobRow[], number];
    return rows[0][0] ?? null;
  }

  // ---- worker

  /** One-time exports a worker may take now: due, not finished, and not leased by a live worker. */
  async dueJobIds(limit: number): Promise<string[]> {
    const rows = (await this.ds.query(
      `SELECT id FROM "exports"."jobs" WHERE interval_hours IS NULL AND status IN ('CREATED', 'RUNNING') AND run_after <= now()
         AND (lease_until IS NULL OR lease_until < now()) ORDER BY run_after, id LIMIT $1`,
      [limit],
    )) as { id: string }[];
    return rows.map((r) => r.id);
  }

  /** Takes a job for this worker (at most one worker holds a job's lease); null when another has it or it is not runnable. */
  async claim(id: string, owner: string, leaseMs: number): Promise<JobRow | null> {
    const rows = (await this.ds.query(
      `UPDATE "exports"."jobs" SET status = 'RUNNING', lease_owner = $2, lease_until = now() + ($3::text || ' milliseconds')::interval,
         attempts = attempts + 1, started_at = COALESCE(started_at, now()), updated_at = now()
       WHERE id = $1 AND interval_hours IS NULL AND status IN ('CREATED', 'RUNNING') AND run_after <= now()
         AND (lease_until IS NULL OR lease_until < now() OR lease_owner = $2)
       RETURNING ${JOB_COLUMNS}`,
      [id, owner, String(leaseMs)],
    )) as [JobRow[], number];
    return rows[0][0] ?? null;
  }

  /** Extends the lease; false when the job was cancelled, timed out or taken by another worker. */
  async heartbeat(id: string, owner: string, leaseMs: number): Promise<boolean> {
    const rows = (await this.ds.query(
      `UPDATE "exports"."jobs" SET lease_until = now() + ($3::text || ' milliseconds')::interval
       WHERE id = $1 AND lease_owner = $2 AND status = 'RUNNING' RETURNING id`,
      [id, owner, String(leaseMs)],
    )) as [unknown[], number];
    return rows[0].length > 0;
  }

  /** Records a finished file and moves the cursor past its rows, atomically, if this worker still holds the job. */
  async commitFile(
    id: string,
    owner: string,
    file: { seq: number; key: string; rows: number; bytes: number; cursor_us: string; cursor_id: string },
  ): Promise<boolean> {
    return this.ds.transaction(async (m) => {
      const rows = (await m.query(
        `UPDATE "exports"."jobs" SET rows_written = rows_written + $3, files_written = files_written + 1, cursor_us = $4, cursor_id = $5, updated_at = now()
         WHERE id = $1 AND lease_owner = $2 AND status = 'RUNNING' AND files_written = $6 - 1 RETURNING id`,
        [id, owner, file.rows, file.cursor_us, file.cursor_id, file.seq],
      )) as [unknown[], number];
      if (rows[0].length === 0) return false;
      await m.query(`INSERT INTO "exports"."files" (export_id, seq, key, rows, bytes) VALUES ($1,$2,$3,$4,$5)`, [id, file.seq, file.key, file.rows, file.bytes]);
      return true;
    }).then((committed) => {
      // Counted once the file is committed: a file written again after a crash counts once.
      if (committed) {
        METRICS.exportRows.inc(file.rows);
        METRICS.exportBytes.inc(file.bytes);
      }
      return committed;
    });
  }

  async finish(id: string, owner: string, status: 'COMPLETED' | 'FAILED', error: string | null): Promise<boolean> {
    const rows = (await this.ds.query(
      `UPDATE "exports"."jobs" SET status = $3, error = $4, finished_at = now(), updated_at = now(), lease_owner = NULL, lease_until = NULL
       WHERE id = $1 AND lease_owner = $2 AND status = 'RUNNING' RETURNING id`,
      [id, owner, status, error],
    )) as [unknown[], number];
    return rows[0].length > 0;
  }

  /** Gives a failed attempt back to be taken again after `delayMs`, keeping the error for GET. */
  async retryLater(id: string, owner: string, delayMs: number, error: string): Promise<boolean> {
    const rows = (await this.ds.query(
      `UPDATE "exports"."jobs" SET lease_owner = NULL, lease_until = NULL, error = $3, updated_at = now(),
         run_after = now() + ($4::text || ' milliseconds')::interval
       WHERE id = $1 AND lease_owner = $2 AND status = 'RUNNING' RETURNING id`,
      [id, owner, error, String(delayMs)],
    )) as [unknown[], number];
    return rows[0].length > 0;
  }

  /** Gives a job back (worker shutdown) so another worker resumes it at once instead of after the lease. */
  async release(id: string, owner: string): Promise<void> {
    await this.ds.query(`UPDATE "exports"."jobs" SET lease_until = NULL, lease_owner = NULL WHERE id = $1 AND lease_owner = $2 AND status = 'RUNNING'`, [id, owner]);
  }

  /** Exports running longer than the runtime timeout become TIMEDOUT. */
  async timeOut(maxRuntimeMs: number): Promise<number> {
    const rows = (await this.ds.query(
      `UPDATE "exports"."jobs" SET status = 'TIMEDOUT', finished_at = now(), updated_at = now(), error = 'The export exceeded its runtime limit',
         lease_owner = NULL, lease_until = NULL
       WHERE interval_hours IS NULL AND status = 'RUNNING' AND started_at < now() - ($1::text || ' milliseconds')::interval RETURNING id`,
      [String(maxRuntimeMs)],
    )) as [unknown[], number];
    return rows[0].length;
  }

  async files(id: string): Promise<{ seq: number; key: string; rows: number; bytes: string }[]> {
    return (await this.ds.query(`SELECT seq, key, rows, bytes FROM "exports"."files" WHERE export_id = $1 ORDER BY seq`, [id])) as {
      seq: number;
      key: string;
      rows: number;
      bytes: string;
    }[];
  }

  /**
   * Spawns the due windows of every active scheduled export: window n covers
   * [start + n*interval, start + (n+1)*interval) and is due 10 minutes after its end. Returns the new jobs.
   */
  async spawnDueWindows(now: Date, delayMs: number, maxPerExport: number): Promise<JobRow[]> {
    return this.ds.transaction(async (m) => {
      const scheduled = (await m.query(
        `SELECT ${JOB_COLUMNS} FROM "exports"."jobs" WHERE interval_hours IS NOT NULL AND status IN ('CREATED', 'RUNNING') FOR UPDATE SKIP LOCKED`,
      )) as JobRow[];
      const spawned: JobRow[] = [];
      for (const s of scheduled) {
        const intervalUs = BigInt(s.interval_hours as number) * 3_600_000_000n;
        let n = s.next_window;
        let count = 0;
        const nowUs = BigInt(now.getTime()) * 1000n;
        for (; count < maxPerExport; n++, count++) {
          const startUs = BigInt(s.start_us) + BigInt(n) * intervalUs;
          const endUs = startUs + intervalUs;
          if (endUs + BigInt(delayMs) * 1000n > nowUs) break;
          const job = await this.insertJob(
            {
              tenant_id: s.tenant_id,
              organization_id: s.organization_id,
              destination_id: s.destination_id,
              session_id: s.session_id,
              start_time: microsToIso(startUs),
              end_time: microsToIso(endUs),
              start_us: startUs.toString(),
              end_us: endUs.toString(),
              interval_hours: null,
              filter: s.filter,
              export_fields: s.export_fields,
              format_version: s.format_version,
              identity: s.identity,
              source_bulk_export_id: s.id,
              window_index: n,
              run_after: new Date(Number(endUs / 1000n) + delayMs),
            },
            m,
          );
          if (job) spawned.push(job);
        }
        await m.query(
          `UPDATE "exports"."jobs" SET next_window = $2, status = 'RUNNING', started_at = COALESCE(started_at, now()), updated_at = now() WHERE id = $1`,
          [s.id, n],
        );
      }
      return spawned;
    });
  }
}

export function microsToIso(us: bigint): string {
  const ms = Number(us / 1000n);
  const frac = (us % 1_000_000n).toString().padStart(6, '0');
  return `${new Date(ms).toISOString().slice(0, 19)}.${frac}Z`;
}
