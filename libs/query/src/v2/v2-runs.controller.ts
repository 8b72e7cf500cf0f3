import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import {
  v2RunGetQuerySchema,
  v2RunIdParamSchema,
  v2RunQuerySchema,
  v2RunShareCreateSchema,
  v2RunShareDeleteSchema,
  v2RunUrlQuerySchema,
  v2TraceIdParamSchema,
  type Identity,
} from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { parseOrThrow } from '@th/platform';
import { SharesService } from './shares.service';
import { V2RunsService, type V2Page, type V2Run } from './v2-runs.service';

/** The origin the caller reached (the gateway forwards it as X-Forwarded-Host/-Proto). */
function originOf(req: Request): string {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.split(',')[0].trim();
  const host = first(req.headers['x-forwarded-host']) ?? req.headers.host ?? 'localhost';
  const proto = first(req.headers['x-forwarded-proto']) ?? req.protocol;
  return `${proto === 'https' ? 'https' : 'http'}://${host}`;
}

@Controller('api/v2/runs')
export class V2RunsController {
  constructor(
    private readonly runs: V2RunsService,
    private readonly shares: SharesService,
  ) {}

  @Post('query')
  @HttpCode(200)
  query(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<V2Page<V2Run>> {
    return this.runs.query(identity, parseOrThrow(v2RunQuerySchema, body ?? {}, ['body']));
  }

  @Get(':run_id')
  get(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<V2Run> {
    const { run_id } = parseOrThrow(v2RunIdParamSchema, params, ['path']);
    const q = parseOrThrow(v2RunGetQuerySchema, query, ['query']);
    return this.runs.get(identity, run_id, q.project_id, q.selects);
  }

  @Get(':run_id/url')
  url(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown, @Req() req: Request): { url: string } {
    const { run_id } = parseOrThrow(v2RunIdParamSchema, params, ['path']);
    const q = parseOrThrow(v2RunUrlQuerySchema, query, ['query']);
    return this.runs.url(identity, run_id, q.project_id, q.trace_id, originOf(req));
  }

  @Post(':run_id/share')
  @HttpCode(200)
  share(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<{ share_token: string }> {
    const { run_id } = parseOrThrow(v2RunIdParamSchema, params, ['path']);
    const b = parseOrThrow(v2RunShareCreateSchema, body ?? {}, ['body']);
    return this.shares.shareTrace(identity, run_id, b.session_id, b.trace_id);
  }

  /** The path names the trace and the body its project (as the generated clients send them); idempotent. */
  @Delete(':trace_id/share')
  @HttpCode(204)
  unshare(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<void> {
    const { trace_id } = parseOrThrow(v2TraceIdParamSchema, params, ['path']);
    return this.shares.unshareTrace(identity, parseOrThrow(v2RunShareDeleteSchema, body ?? {}, ['body']).session_id, trace_id);
  }
}
