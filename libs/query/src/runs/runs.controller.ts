import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { runIdParamSchema, runQuerySchema, runStatsQuerySchema, type Identity, type RunRecord, type RunStats } from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
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
