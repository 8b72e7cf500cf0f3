import { Body, Controller, Delete, Get, Param, Put, Res } from '@nestjs/common';
import type { Response } from 'express';
import { runIdParamSchema, runShareCreateSchema, type Identity, type RunShare } from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { parseOrThrow } from '@th/platform';
import { SharesService } from './shares.service';

/** The classic SDKs' share_run, read_run_shared_link, unshare_run. */
@Controller('runs')
export class RunSharesController {
  constructor(private readonly shares: SharesService) {}

  @Put(':run_id/share')
  share(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<RunShare> {
    const { run_id } = parseOrThrow(runIdParamSchema, params, ['path']);
    return this.shares.shareRun(identity, run_id, parseOrThrow(runShareCreateSchema, body ?? {}, ['body']).share_token);
  }

  /** A JSON null when the run is not shared (the SDKs read the body; Nest would send an empty one). */
  @Get(':run_id/share')
  async shareState(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Res() res: Response): Promise<void> {
    const { run_id } = parseOrThrow(runIdParamSchema, params, ['path']);
    res.status(200).json(await this.shares.runShare(identity, run_id));
  }

  @Delete(':run_id/share')
  async unshare(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    await this.shares.unshareRun(identity, parseOrThrow(runIdParamSchema, params, ['path']).run_id);
    return {};
  }
}
