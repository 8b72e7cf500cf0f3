import { Inject, Injectable } from '@nestjs/common';
import { TOPICS, toEpochMicros, type BulkExport, type BulkExportCreate, type Identity } from '@th/contracts';
import { EventBus } from '@th/bus';
import { AuditPublisher } from '@th/audit-client';
import { conflict, notFound } from '@th/platform';
import { ExportsRepository, type JobRow } from '../exports.repository';
import { assertExportPlan } from '../plan';
import { compileExportFilter } from './run-filter';

const RESOURCE = 'bulk_export';

/** Bulk export jobs through the API: create (one-time or scheduled), read, list, cancel, and the exports a scheduled one spawned. */
@Injectable()
export class BulkExportsService {
  constructor(
    private readonly repo: ExportsRepository,
    @Inject(EventBus) private readonly bus: EventBus,
    @Inject(AuditPublisher) private readonly audit: AuditPublisher,
  ) {}

  create(identity: Identity, body: BulkExportCreate): Promise<BulkExport> {
    return this.audit.track(
      { identity },
      async () => {
        assertExportPlan(identity);
        const dest = await this.repo.findDestination(identity, body.bulk_export_destination_id);
        if (!dest) throw notFound(`Bulk export destination ${body.bulk_export_destination_id}`);
        // The worker compiles the same expression into its chunk query; an invalid one is refused here (422 at body.filter).
        if (body.filter) compileExportFilter(body.filter);
        const scheduled = body.interval_hours !== null && body.interval_hours !== undefined;
        const job = await this.repo.insertJob({
          tenant_id: identity.tenant_id,
          organization_id: identity.organization_id,
          destination_id: dest.id,
          session_id: body.session_id,
          start_time: body.start_time,
          end_time: scheduled ? null : (body.end_time ?? null),
          start_us: String(toEpochMicros(body.start_time)),
          end_us: scheduled ? null : String(toEpochMicros(body.end_time as string)),
          interval_hours: scheduled ? (body.interval_hours as number) : null,
          filter: body.filter ?? null,
          export_fields: body.export_fields ?? null,
          format_version: body.format_version,
          identity,
        });
        if (!job) throw new Error('The export could not be stored');
        // Durable in PostgreSQL first; the bus only wakes a worker (workers also poll for due exports).
        if (!scheduled) await this.bus.publish(TOPICS.exports, [{ key: job.id, value: { kind: 'export.ready', export_id: job.id, tenant_id: job.tenant_id } }]);
        return present(job);
      },
      (e) => [{ type: RESOURCE, id: e.id }],
    );
  }

  async get(identity: Identity, id: string): Promise<BulkExport> {
    assertExportPlan(identity);
    const job = await this.repo.findJob(identity, id);
    if (!job) throw notFound(`Bulk export ${id}`);
    return present(job);
  }

  async list(identity: Identity, page: { limit: number; offset: number }): Promise<BulkExport[]> {
    assertExportPlan(identity);
    return (await this.repo.listJobs(identity, page)).map(present);
  }

  /** The exports a scheduled export spawned (newest window first); a one-time export has none. */
  async runs(identity: Identity, id: string, page: { limit: number; offset: number }): Promise<BulkExport[]> {
    assertExportPlan(identity);
    const job = await this.repo.findJob(identity, id);
    if (!job) throw notFound(`Bulk export ${id}`);
    return (await this.repo.listJobs(identity, page, id)).map(present);
  }

  cancel(identity: Identity, id: string): Promise<BulkExport> {
    return this.audit.track(
      { identity, resources: [{ type: RESOURCE, id }] },
      async () => {
        assertExportPlan(identity);
        const job = await this.repo.findJob(identity, id);
        if (!job) throw notFound(`Bulk export ${id}`);
        const cancelled = await this.repo.cancel(identity, id);
        if (!cancelled) throw conflict(`Bulk export ${id} is ${job.status} and can no longer be cancelled`);
        return present(cancelled);
      },
    );
  }
}

export function present(job: JobRow): BulkExport {
  return {
    id: job.id,
    tenant_id: job.tenant_id,
    bulk_export_destination_id: job.destination_id,
    session_id: job.session_id,
    start_time: job.start_time,
    end_time: job.end_time,
    interval_hours: job.interval_hours,
    filter: job.filter,
    export_fields: job.export_fields,
    format_version: job.format_version,
    status: job.status,
    source_bulk_export_id: job.source_bulk_export_id,
    rows_written: Number(job.rows_written),
    files_written: job.files_written,
    error: job.error,
    created_at: job.created_at.toISOString(),
    updated_at: job.updated_at.toISOString(),
    started_at: job.started_at ? job.started_at.toISOString() : null,
    finished_at: job.finished_at ? job.finished_at.toISOString() : null,
  };
}
