import { Body, Controller, Get, HttpCode, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { tenantHandleSetSchema, type HubSettings, type Identity } from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import { parseOrThrow } from '@th/platform';
import { AdminAudit } from './admin-audit';
import { WorkspacesService } from './workspaces.service';

/** The hub's settings: the calling workspace's tenant handle, which the workspace owns. */
@Controller('settings')
export class HubSettingsController {
  constructor(
    private readonly workspaces: WorkspacesService,
    private readonly audit: AdminAudit,
  ) {}

  @Get()
  get(@CurrentIdentity() identity: Identity): Promise<HubSettings> {
    return this.workspaces.hubSettings(identity);
  }

  @Post('handle')
  @TrackedOperation()
  @HttpCode(200)
  setHandle(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<HubSettings> {
    return this.audit.run(
      identity,
      req,
      () => this.workspaces.setTenantHandle(identity, parseOrThrow(tenantHandleSetSchema, body ?? {}, ['body']).tenant_handle),
      undefined,
      [{ type: 'workspace', id: identity.tenant_id }],
    );
  }
}
