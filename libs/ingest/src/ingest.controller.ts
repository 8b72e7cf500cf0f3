import { Body, Controller, HttpCode, Param, Patch, Post, Req } from '@nestjs/common';
import type { Identity } from '@th/contracts';
import { runBatchSchema, runCreateSchema, runIdParamSchema, runUpdateSchema } from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { parseOrThrow, type RawBodyRequest } from '@th/platform';
import { IngestService } from './ingest.service';
import { fastRunBatchPaced, fastRunCreate } from './fast-validate';

/**
 * Once its runs are stored, the parsed batch body (still referenced by the request until the response
 * is sent) lets go of them: a request that outlived two young-generation collections would otherwise
 * keep its runs alive, as garbage, until V8's next full collection (see RunWriterService.retireReplaced).
 */
function releaseRuns(body: unknown): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const b = body as { post?: unknown; patch?: unknown };
  if (b.post !== undefined) b.post = null;
  if (b.patch !== undefined) b.patch = null;
}

// Runs keep their strings as sent (ClickHouse stores NUL; the fast path does not look), whichever path parses them.
const RUN_TEXT = { anyText: true } as const;

@Controller('runs')
export class IngestController {
  constructor(private readonly ingest: IngestService) {}

  @Post()
  @HttpCode(202)
  async create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<{ id: string }> {
    const run = fastRunCreate(body) ?? parseOrThrow(runCreateSchema, body, ['body'], RUN_TEXT);
    const withId = { ...run, id: run.id ?? crypto.randomUUID() };
    await this.ingest.ingest(identity, [withId], []);
    return { id: withId.id };
  }

  @Post('batch')
  @HttpCode(202)
  async batch(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Record<string, never>> {
    // The hand-written check covers the common shapes; zod decides (and reports 422 locations) for the rest.
    const batch = (await fastRunBatchPaced(body)) ?? parseOrThrow(runBatchSchema, body, ['body'], RUN_TEXT);
    await this.ingest.ingest(identity, batch.post, batch.patch);
    releaseRuns(body);
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
    const patch = parseOrThrow(runUpdateSchema, body, ['body'], RUN_TEXT);
    await this.ingest.ingest(identity, [], [{ ...patch, id: run_id }]);
    return { id: run_id };
  }
}
