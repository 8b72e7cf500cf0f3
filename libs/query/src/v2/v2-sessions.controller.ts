import { Controller, Get, Query } from '@nestjs/common';
import { projectListQuerySchema, v2CursorPageQuerySchema, type Identity, type Project } from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { decodeOffsetCursor, encodePageCursor, parseOrThrow } from '@th/platform';
import { V2RunsService, type V2Page } from './v2-runs.service';

/** GET /api/v2/sessions: the projects list in cursor pages (the generated clients' `sessions.listV2`). */
@Controller('api/v2/sessions')
export class V2SessionsController {
  constructor(private readonly runs: V2RunsService) {}

  @Get()
  async list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<V2Page<Project & { type: string }>> {
    const { page_size, cursor, ...rest } = query && typeof query === 'object' ? (query as Record<string, unknown>) : {};
    const page = parseOrThrow(v2CursorPageQuerySchema, { page_size, cursor }, ['query']);
    const offset = decodeOffsetCursor(page.cursor, ['query', 'cursor']);
    const { reference_dataset_id, ...filters } = rest;
    // Validated here, so a bad filter is a 422 at its own name.
    parseOrThrow(projectListQuerySchema, { ...filters, reference_dataset: reference_dataset_id }, ['query']);
    const res = await this.runs.sessions(identity, { ...filters, reference_dataset: reference_dataset_id }, offset, page.page_size);
    return { items: res.items, next_cursor: res.more ? encodePageCursor({ o: offset + page.page_size }) : '' };
  }
}
