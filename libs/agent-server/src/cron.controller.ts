import { Body, Controller, Delete, Header, HttpCode, Inject, Param, Patch, Post } from '@nestjs/common';
import type { AgentCron } from '@th/contracts';
import { CronService } from './cron.service';

export const CRON_SERVICE = Symbol('CRON_SERVICE');

@Controller()
export class CronsController {
  constructor(@Inject(CRON_SERVICE) private readonly crons: CronService) {}

  @Post('threads/:thread_id/runs/crons')
  @HttpCode(200)
  createForThread(@Param('thread_id') threadId: string, @Body() body: unknown): Promise<AgentCron> {
    return this.crons.createCron(threadId, body);
  }

  @Post('runs/crons')
  @HttpCode(200)
  create(@Body() body: unknown): Promise<AgentCron> {
    return this.crons.createCron(null, body);
  }

  @Post('runs/crons/search')
  @HttpCode(200)
  search(@Body() body: unknown): Promise<Partial<AgentCron>[]> {
    return this.crons.searchCrons(body);
  }

  @Post('runs/crons/count')
  @HttpCode(200)
  @Header('content-type', 'application/json; charset=utf-8') // a bare number, still JSON
  count(@Body() body: unknown): Promise<number> {
    return this.crons.countCrons(body);
  }

  @Patch('runs/crons/:cron_id')
  update(@Param('cron_id') id: string, @Body() body: unknown): Promise<AgentCron> {
    return this.crons.updateCron(id, body);
  }

  @Delete('runs/crons/:cron_id')
  @HttpCode(204)
  async remove(@Param('cron_id') id: string): Promise<void> {
    await this.crons.deleteCron(id);
  }
}
