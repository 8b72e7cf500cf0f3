import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  publicRunQuerySchema,
  v2PublicRunGetQuerySchema,
  v2PublicRunParamSchema,
  v2PublicRunQuerySchema,
  v2ShareTokenParamSchema,
  type RunRecord,
} from '@th/contracts';
import { Public } from '@th/auth';
import { parseOrThrow } from '@th/platform';
import { SharesService } from './shares.service';
import type { V2Run } from './v2-runs.service';

/** Shared runs read by their token, without a key (the classic SDKs' read_shared_run, list_shared_runs). */
@Controller('public')
export class PublicRunsController {
  constructor(private readonly shares: SharesService) {}

  @Public()
  @Get(':share_token/run')
  run(@Param() params: unknown): Promise<Partial<RunRecord>> {
    return this.shares.publicRun(parseOrThrow(v2ShareTokenParamSchema, params, ['path']).share_token);
  }

  @Public()
  @Get(':share_token/run/:run_id')
  runById(@Param() params: unknown): Promise<Partial<RunRecord>> {
    const p = parseOrThrow(v2PublicRunParamSchema, params, ['path']);
    return this.shares.publicRunById(p.share_token, p.run_id);
  }

  @Public()
  @Post(':share_token/runs/query')
  @HttpCode(200)
  query(@Param() params: unknown, @Body() body: unknown): Promise<{ runs: Partial<RunRecord>[]; cursors: { next: string | null } }> {
    const { share_token } = parseOrThrow(v2ShareTokenParamSchema, params, ['path']);
    return this.shares.publicQuery(share_token, parseOrThrow(publicRunQuerySchema, body ?? {}, ['body']));
  }
}

/** The same through the generated (v2) clients' `public.runs`. */
@Controller('api/v2/public')
export class V2PublicRunsController {
  constructor(private readonly shares: SharesService) {}

  @Public()
  @Get(':share_token/run/:run_id')
  run(@Param() params: unknown, @Query() query: unknown): Promise<V2Run> {
    const p = parseOrThrow(v2PublicRunParamSchema, params, ['path']);
    return this.shares.publicV2Run(p.share_token, p.run_id, parseOrThrow(v2PublicRunGetQuerySchema, query, ['query']).selects);
  }

  @Public()
  @Post(':share_token/runs/query')
  @HttpCode(200)
  query(@Param() params: unknown, @Body() body: unknown): Promise<{ items: V2Run[] }> {
    const { share_token } = parseOrThrow(v2ShareTokenParamSchema, params, ['path']);
    return this.shares.publicV2Query(share_token, parseOrThrow(v2PublicRunQuerySchema, body ?? {}, ['body']).selects);
  }
}
