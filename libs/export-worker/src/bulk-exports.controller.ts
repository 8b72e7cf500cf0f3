import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import {
  bulkExportCreateSchema,
  bulkExportIdParamSchema,
  bulkExportListQuerySchema,
  bulkExportUpdateSchema,
  exportDestinationCreateSchema,
  exportDestinationIdParamSchema,
  exportDestinationUpdateSchema,
  type BulkExport,
  type ExportDestination,
  type Identity,
} from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import { parseOrThrow } from '@th/platform';
import { DestinationsService } from './destinations/destinations.service';
import { BulkExportsService } from './jobs/bulk-exports.service';

@Controller('bulk-exports')
export class BulkExportsController {
  constructor(
    private readonly destinations: DestinationsService,
    private readonly exports: BulkExportsService,
  ) {}

  @Post('destinations')
  @TrackedOperation()
  @HttpCode(200)
  createDestination(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<ExportDestination> {
    return this.destinations.create(identity, parseOrThrow(exportDestinationCreateSchema, body, ['body']));
  }

  @Get('destinations')
  @TrackedOperation()
  listDestinations(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<ExportDestination[]> {
    return this.destinations.list(identity, parseOrThrow(bulkExportListQuerySchema, query, ['query']));
  }

  @Get('destinations/:destination_id')
  @TrackedOperation()
  getDestination(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<ExportDestination> {
    return this.destinations.get(identity, parseOrThrow(exportDestinationIdParamSchema, params, ['path']).destination_id);
  }

  @Patch('destinations/:destination_id')
  @TrackedOperation()
  updateDestination(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<ExportDestination> {
    const { destination_id } = parseOrThrow(exportDestinationIdParamSchema, params, ['path']);
    return this.destinations.update(identity, destination_id, parseOrThrow(exportDestinationUpdateSchema, body ?? {}, ['body']));
  }

  @Post()
  @TrackedOperation()
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<BulkExport> {
    return this.exports.create(identity, parseOrThrow(bulkExportCreateSchema, body, ['body']));
  }

  @Get()
  list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<BulkExport[]> {
    return this.exports.list(identity, parseOrThrow(bulkExportListQuerySchema, query, ['query']));
  }

  @Get(':export_id')
  get(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<BulkExport> {
    return this.exports.get(identity, parseOrThrow(bulkExportIdParamSchema, params, ['path']).export_id);
  }

  /** Cancel: `{"status": "CANCELLED"}`. */
  @Patch(':export_id')
  @TrackedOperation()
  update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<BulkExport> {
    const { export_id } = parseOrThrow(bulkExportIdParamSchema, params, ['path']);
    parseOrThrow(bulkExportUpdateSchema, body ?? {}, ['body']);
    return this.exports.cancel(identity, export_id);
  }

  @Post(':export_id/cancel')
  @TrackedOperation()
  @HttpCode(200)
  cancel(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<BulkExport> {
    return this.exports.cancel(identity, parseOrThrow(bulkExportIdParamSchema, params, ['path']).export_id);
  }

  /** The exports a scheduled export spawned, each with source_bulk_export_id set. */
  @Get(':export_id/runs')
  runs(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<BulkExport[]> {
    const { export_id } = parseOrThrow(bulkExportIdParamSchema, params, ['path']);
    return this.exports.runs(identity, export_id, parseOrThrow(bulkExportListQuerySchema, query, ['query']));
  }
}
