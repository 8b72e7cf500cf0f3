import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import {
  projectCreateQuerySchema,
  projectCreateSchema,
  projectDashboardRequestSchema,
  savedFilterCreateSchema,
  savedFilterParamSchema,
  type SavedFilter,
  projectGetQuerySchema,
  projectIdParamSchema,
  projectListQuerySchema,
  projectResolveRequestSchema,
  projectUpdateSchema,
  type Identity,
  type Project,
  type ProjectDashboard,
  type ProjectResolveResponse,
} from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import { parseOrThrow } from '@th/platform';
import { ProjectsService } from './projects.service';
import { MonitoringService } from './monitoring.service';
import { SavedFiltersService } from './saved-filters.service';

@Controller('sessions')
export class ProjectsController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly monitoring: MonitoringService,
    private readonly savedFilters: SavedFiltersService,
  ) {}

  @Post()
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Query() query: unknown): Promise<Project> {
    const { upsert } = parseOrThrow(projectCreateQuerySchema, query, ['query']);
    return this.projects.create(identity, parseOrThrow(projectCreateSchema, body, ['body']), upsert ?? false);
  }

  @Get()
  list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<Project[]> {
    return this.projects.list(identity, parseOrThrow(projectListQuerySchema, query, ['query']));
  }

  @Get(':session_id')
  get(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<Project> {
    const { session_id } = parseOrThrow(projectIdParamSchema, params, ['path']);
    const { include_stats, stats_start_time } = parseOrThrow(projectGetQuerySchema, query, ['query']);
    return this.projects.get(identity, session_id, include_stats ?? false, stats_start_time);
  }

  @Post(':session_id/dashboard')
  @HttpCode(200)
  dashboard(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<ProjectDashboard> {
    const { session_id } = parseOrThrow(projectIdParamSchema, params, ['path']);
    return this.monitoring.dashboard(identity, session_id, parseOrThrow(projectDashboardRequestSchema, body ?? {}, ['body']));
  }

  @Get(':session_id/filters')
  listFilters(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<SavedFilter[]> {
    const { session_id } = parseOrThrow(projectIdParamSchema, params, ['path']);
    return this.savedFilters.list(identity, session_id);
  }

  @Post(':session_id/filters')
  @HttpCode(200)
  saveFilter(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<SavedFilter> {
    const { session_id } = parseOrThrow(projectIdParamSchema, params, ['path']);
    return this.savedFilters.create(identity, session_id, parseOrThrow(savedFilterCreateSchema, body ?? {}, ['body']));
  }

  @Delete(':session_id/filters/:filter_id')
  async deleteFilter(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    const { session_id, filter_id } = parseOrThrow(savedFilterParamSchema, params, ['path']);
    await this.savedFilters.delete(identity, session_id, filter_id);
    return {};
  }

  @Patch(':session_id')
  @TrackedOperation()
  update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<Project> {
    const { session_id } = parseOrThrow(projectIdParamSchema, params, ['path']);
    return this.projects.update(identity, session_id, parseOrThrow(projectUpdateSchema, body ?? {}, ['body']));
  }

  @Delete(':session_id')
  @HttpCode(202)
  @TrackedOperation()
  async delete(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    const { session_id } = parseOrThrow(projectIdParamSchema, params, ['path']);
    await this.projects.delete(identity, session_id);
    return {};
  }
}

/** Service-to-service: ingest resolves project names through this (behind the gateway's signed identity). */
@Controller('internal/projects')
export class InternalProjectsController {
  constructor(private readonly projects: ProjectsService) {}

  @Post('resolve')
  @HttpCode(200)
  resolve(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<ProjectResolveResponse> {
    return this.projects.resolve(identity, parseOrThrow(projectResolveRequestSchema, body, ['body']));
  }
}
