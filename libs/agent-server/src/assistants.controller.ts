import { Body, Header, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { type AgentAssistant, type AgentAssistantVersion, type AgentGraphSchemas } from '@th/contracts';
import { AgentService } from './agent.service';
import { AGENT_SERVICE } from './agent-service.token';

@Controller('assistants')
export class AssistantsController {
  constructor(@Inject(AGENT_SERVICE) private readonly agents: AgentService) {}

  @Post()
  @HttpCode(200)
  create(@Body() body: unknown): Promise<AgentAssistant> {
    return this.agents.assistants.createAssistant(body);
  }

  @Post('count')
  @HttpCode(200)
  @Header('content-type', 'application/json; charset=utf-8') // a bare number, still JSON
  count(@Body() body: unknown): Promise<number> {
    return this.agents.assistants.countAssistants(body);
  }

  @Post('search')
  @HttpCode(200)
  async search(@Body() body: unknown, @Res({ passthrough: true }) res: Response): Promise<AgentAssistant[]> {
    const page = await this.agents.assistants.searchAssistants(body);
    res.setHeader('X-Pagination-Total', String(page.total));
    if (page.next !== null) res.setHeader('X-Pagination-Next', String(page.next));
    return page.items;
  }

  @Get(':assistant_id')
  get(@Param('assistant_id') id: string): Promise<AgentAssistant> {
    return this.agents.assistants.resolveAssistant(id);
  }

  @Patch(':assistant_id')
  update(@Param('assistant_id') id: string, @Body() body: unknown): Promise<AgentAssistant> {
    return this.agents.assistants.updateAssistant(id, body);
  }

  @Post(':assistant_id/versions')
  @HttpCode(200)
  versions(@Param('assistant_id') id: string, @Body() body: unknown): Promise<AgentAssistantVersion[]> {
    return this.agents.assistants.assistantVersions(id, body);
  }

  @Post(':assistant_id/latest')
  @HttpCode(200)
  setLatest(@Param('assistant_id') id: string, @Body() body: unknown): Promise<AgentAssistant> {
    return this.agents.assistants.setLatestVersion(id, body);
  }

  @Get(':assistant_id/graph')
  graph(@Param('assistant_id') id: string, @Query() query: Record<string, unknown>): Promise<unknown> {
    return this.agents.assistants.assistantGraphJson(id, query);
  }

  @Get(':assistant_id/schemas')
  schemas(@Param('assistant_id') id: string): Promise<AgentGraphSchemas> {
    return this.agents.assistants.assistantSchemas(id);
  }

  @Get(':assistant_id/subgraphs')
  subgraphs(@Param('assistant_id') id: string, @Query() query: Record<string, unknown>): Promise<unknown> {
    return this.agents.assistants.assistantSubgraphs(id, undefined, query);
  }

  @Get(':assistant_id/subgraphs/:namespace')
  subgraphsIn(@Param('assistant_id') id: string, @Param('namespace') namespace: string, @Query() query: Record<string, unknown>): Promise<unknown> {
    return this.agents.assistants.assistantSubgraphs(id, namespace, query);
  }

  @Delete(':assistant_id')
  @HttpCode(204)
  async remove(@Param('assistant_id') id: string, @Query() query: Record<string, unknown>): Promise<void> {
    await this.agents.assistants.deleteAssistant(id, query);
  }
}
