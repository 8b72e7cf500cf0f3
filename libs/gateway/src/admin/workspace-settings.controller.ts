import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Req } from '@nestjs/common';
import type { Request } from 'express';
import {
  idParamSchema,
  memberRoleUpdateSchema,
  ttlSettingsUpdateSchema,
  usageLimitUpsertSchema,
  userIdParamSchema,
  workspaceMemberAddSchema,
  workspaceSecretsUpdateSchema,
  type Identity,
  type TtlSettings,
  type UsageLimit,
  type WorkspaceMember,
  type WorkspaceSecretKey,
} from '@th/contracts';
import { CurrentIdentity, OrganizationScope } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import { parseOrThrow } from '@th/platform';
import { AdminAudit } from './admin-audit';
import { WorkspaceLimitsService } from './workspace-limits.service';
import { WorkspaceMembersService } from './workspace-members.service';
import { WorkspaceSecretsService } from './workspace-secrets.service';
import { resource } from './credentials.controller';

const workspace = (identity: Identity) => (identity.tenant_id ? [{ type: 'workspace', id: identity.tenant_id }] : []);

/** The calling workspace (X-Tenant-Id or the key's own): members, secrets, retention. */
@Controller('workspaces/current')
@OrganizationScope()
export class CurrentWorkspaceController {
  constructor(
    private readonly workspaceMembers: WorkspaceMembersService,
    private readonly workspaceSecrets: WorkspaceSecretsService,
    private readonly limits: WorkspaceLimitsService,
    private readonly audit: AdminAudit,
  ) {}

  @Get('members')
  members(@CurrentIdentity() identity: Identity): Promise<WorkspaceMember[]> {
    return this.workspaceMembers.listWorkspaceMembers(identity);
  }

  @Post('members')
  @TrackedOperation()
  @HttpCode(200)
  addMember(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<WorkspaceMember> {
    return this.audit.run(identity,
      req,
      () => this.workspaceMembers.addWorkspaceMember(identity, parseOrThrow(workspaceMemberAddSchema, body ?? {}, ['body'])),
      (m) => [{ type: 'user', id: m.user_id }, ...workspace(identity)],
    );
  }

  @Patch('members/:user_id')
  @TrackedOperation()
  updateMember(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Body() body: unknown, @Req() req: Request): Promise<WorkspaceMember> {
    return this.audit.run(identity,
      req,
      () => {
        const { user_id } = parseOrThrow(userIdParamSchema, params, ['path']);
        return this.workspaceMembers.updateWorkspaceMember(identity, user_id, parseOrThrow(memberRoleUpdateSchema, body ?? {}, ['body']));
      },
      undefined,
      [...resource('user', params.user_id), ...workspace(identity)],
    );
  }

  @Delete('members/:user_id')
  @TrackedOperation()
  async deleteMember(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Req() req: Request): Promise<Record<string, never>> {
    await this.audit.run(identity,
      req,
      () => this.workspaceMembers.deleteWorkspaceMember(identity, parseOrThrow(userIdParamSchema, params, ['path']).user_id),
      undefined,
      [...resource('user', params.user_id), ...workspace(identity)],
    );
    return {};
  }

  @Get('secrets')
  secrets(@CurrentIdentity() identity: Identity): Promise<WorkspaceSecretKey[]> {
    return this.workspaceSecrets.listSecrets(identity);
  }

  @Post('secrets')
  @TrackedOperation()
  @HttpCode(200)
  updateSecrets(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<WorkspaceSecretKey[]> {
    return this.audit.run(identity,
      req,
      () => this.workspaceSecrets.updateSecrets(identity, parseOrThrow(workspaceSecretsUpdateSchema, body, ['body'])),
      undefined,
      workspace(identity),
    );
  }

  @Get('ttl-settings')
  ttl(@CurrentIdentity() identity: Identity): Promise<TtlSettings> {
    return this.limits.getTtlSettings(identity);
  }

  @Put('ttl-settings')
  @TrackedOperation()
  updateTtl(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<TtlSettings> {
    return this.audit.run(identity,
      req,
      () => this.limits.updateTtlSettings(identity, parseOrThrow(ttlSettingsUpdateSchema, body ?? {}, ['body'])),
      undefined,
      workspace(identity),
    );
  }
}

/** Usage limits of the calling workspace; ingest refuses runs past them. */
@Controller('usage-limits')
@OrganizationScope()
export class UsageLimitsController {
  constructor(
    private readonly limits: WorkspaceLimitsService,
    private readonly audit: AdminAudit,
  ) {}

  @Get()
  list(@CurrentIdentity() identity: Identity): Promise<UsageLimit[]> {
    return this.limits.listUsageLimits(identity);
  }

  @Put()
  @TrackedOperation()
  upsert(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<UsageLimit> {
    return this.audit.run(identity,
      req,
      () => this.limits.upsertUsageLimit(identity, parseOrThrow(usageLimitUpsertSchema, body ?? {}, ['body'])),
      (l) => [{ type: 'usage_limit', id: l.id }, ...workspace(identity)],
    );
  }

  @Delete(':id')
  @TrackedOperation()
  async delete(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Req() req: Request): Promise<Record<string, never>> {
    await this.audit.run(identity, req, () => this.limits.deleteUsageLimit(identity, parseOrThrow(idParamSchema, params, ['path']).id), undefined, [
      ...resource('usage_limit', params.id),
      ...workspace(identity),
    ]);
    return {};
  }
}
