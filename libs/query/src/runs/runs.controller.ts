import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import {
  attachmentDownloadQuerySchema,
  runAttachmentDownloadParamSchema,
  runIdParamSchema,
  runQuerySchema,
  runStatsQuerySchema,
  type Identity,
  type RunRecord,
  type RunStats,
} from '@th/contracts';
import { CurrentIdentity, Public } from '@th/auth';
import { parseOrThrow } from '@th/platform';
import { RunsService } from './runs.service';

@Controller('runs')
export class RunsController {
  constructor(private readonly runs: RunsService) {}

  @Post('query')
  @HttpCode(200)
  query(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<{ runs: Partial<RunRecord>[]; cursors: { next: string | null } }> {
    return this.runs.query(identity, parseOrThrow(runQuerySchema, body ?? {}, ['body']));
  }

  @Post('stats')
  @HttpCode(200)
  stats(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<RunStats> {
    return this.runs.stats(identity, parseOrThrow(runStatsQuerySchema, body ?? {}, ['body']));
  }

  @Get(':run_id')
  get(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Partial<RunRecord>> {
    const { run_id } = parseOrThrow(runIdParamSchema, params, ['path']);
    return this.runs.get(identity, run_id);
  }
}

/** Downloads of run attachments through the signed, expiring URLs in a run's `s3_urls` (no API key). */
@Controller('public/run-attachments')
export class RunAttachmentsController {
  constructor(private readonly runs: RunsService) {}

  @Public()
  @Get(':tenant_id/:run_id/:name')
  async download(@Param() params: unknown, @Query() query: unknown, @Res() res: Response): Promise<void> {
    const p = parseOrThrow(runAttachmentDownloadParamSchema, params, ['path']);
    const q = parseOrThrow(attachmentDownloadQuerySchema, query, ['query']);
    const file = await this.runs.attachment(p.tenant_id, p.run_id, p.name, q.expires, q.signature);
    // Served on the web app's origin: the writer's bytes must never run there (an HTML or SVG attachment
    // would otherwise be a script of the app). Images open inline, everything else downloads.
    res
      .status(200)
      .setHeader('Content-Type', file.mime_type)
      .setHeader('Content-Length', String(file.data.length))
      .setHeader('Cache-Control', 'private, max-age=300')
      .setHeader('X-Content-Type-Options', 'nosniff')
      .setHeader('Content-Security-Policy', "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'")
      .setHeader('Content-Disposition', /^image\/(png|jpeg|gif|webp|avif)$/i.test(file.mime_type) ? 'inline' : `attachment; filename*=UTF-8''${encodeURIComponent(p.name)}`);
    res.end(file.data);
  }
}
