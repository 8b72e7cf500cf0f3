import { Body, Controller, HttpCode, Param, Patch, Post, Req } from '@nestjs/common';
import type { Identity } from '@th/contracts';
import { runBatchSchema, runCreateSchema, runIdParamSchema, runUpdateSchema } from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { parseOrThrow, type RawBodyRequest } from '@th/platform';
import { IngestService } from './ingest.service';
import { fastRunBatch, fastRunCreate } from './fast-validate';

@Controller('runs')
export class IngestController {
  constructor(private readonly ingest: IngestService) {}

  @Post()
  @HttpCode(202)
  async create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<{ id: string }> {
    const run = fastRunCreate(body) ?? parseOrThrow(runCreateSchema, body, ['body']);
    const withId = { ...run, id: run.id ?? crypto.randomUUID() };
    await this.ingest.ingest(identity, [withId], []);
    return { id: withId.id };
  }

  @Post('batch')
  @HttpCode(202)
  async batch(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Record<string, never>> {
    // The hand-written check covers the common shapes; zod decides (and reports 422 locations) for the rest.
    const batch = fastRunBatch(body) ?? parseOrThrow(runBatchSchema, body, ['body']);
    await this.ingest.ingest(identity, batch.post, batch.patch);
    return {};
  }

  @Post('multipart')
  @HttpCode(202)
  async multipart(@CurrentIdentity() identity: Identity, @Req() req: RawBodyRequest): Promise<Record<string, never>> {
    await this.ingest.ingestMultipart(identity, req.headers['content-type'], req.rawBody);
    return {};
  }

  @Patch(':run_id')
  @HttpCode(202)
  async update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<{ id: string }> {
    const { run_id } = parseOrThrow(runIdParamSchema, params, ['path']);
    const patch = parseOrThrow(runUpdateSchema, body, ['body']);
    await this.ingest.ingest(identity, [], [{ ...patch, id: run_id }]);
    return { id: run_id };
  }
}
