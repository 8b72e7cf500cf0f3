import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { v2TraceIdParamSchema, v2TraceQuerySchema, v2TraceRunsQuerySchema, type Identity } from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { parseOrThrow } from '@th/platform';
import { V2RunsService, type V2Page, type V2Run } from './v2-runs.service';

@Controller('api/v2/traces')
export class V2TracesController {
  constructor(private readonly runs: V2RunsService) {}

  @Post('query')
  @HttpCode(200)
  query(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<V2Page<{ root_run: V2Run; trace_aggregates: Record<string, unknown> }>> {
    return this.runs.traces(identity, parseOrThrow(v2TraceQuerySchema, body ?? {}, ['body']));
  }

  @Get(':trace_id/runs')
  runsOf(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<{ items: V2Run[] }> {
    const { trace_id } = parseOrThrow(v2TraceIdParamSchema, params, ['path']);
    return this.runs.traceRuns(identity, trace_id, parseOrThrow(v2TraceRunsQuerySchema, query, ['query']));
  }
}
