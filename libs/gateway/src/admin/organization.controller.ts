import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import {
  basicAuthUsersSchema,
  idParamSchema,
  memberRoleUpdateSchema,
  orgInviteSchema,
  organizationUpdateSchema,
  roleCreateSchema,
  roleUpdateSchema,
  userIdParamSchema,
  workspaceCreateSchema,
  workspaceUpdateSchema,
  type Identity,
  type LoginResponse,
  type PendingInvitation,
  type OrgMember,
  type OrgMembers,
  type Organization,
  type PendingMember,
  type Role,
  type Workspace,
} from '@th/contracts';
import { CurrentIdentity, OrganizationScope } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import { parseOrThrow } from '@th/platform';
import { AdminAudit } from './admin-audit';
import { OrgMembersService } from './org-members.service';
import { OrganizationService } from './organization.service';
import { RolesService } from './roles.service';
import { WorkspacesService } from './workspaces.service';
import { resource } from './credentials.controller';

/** Workspaces of the caller's organization. */
@Controller('workspaces')
@OrganizationScope()
export class WorkspacesController {
  constructor(
    private readonly workspaces: WorkspacesService,
    private readonly audit: AdminAudit,
  ) {}

  @Get()
  list(@CurrentIdentity() identity: Identity): Promise<Workspace[]> {
    return this.workspaces.listWorkspaces(identity);
  }

  @Post()
  @TrackedOperation()
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<Workspace> {
    return this.audit.run(identity,
      req,
      () => this.workspaces.createWorkspace(identity, parseOrThrow(workspaceCreateSchema, body ?? {}, ['body'])),
      (w) => [{ type: 'workspace', id: w.id }],
    );
  }

  @Patch(':id')
  @TrackedOperation()
  update(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Body() body: unknown, @Req() req: Request): Promise<Workspace> {
    return this.audit.run(identity,
      req,
      () => {
        const { id } = parseOrThrow(idParamSchema, params, ['path']);
        return this.workspaces.updateWorkspace(identity, id, parseOrThrow(workspaceUpdateSchema, body ?? {}, ['body']));
      },
      undefined,
      resource('workspace', params.id),
    );
  }

  @Delete(':id')
  @TrackedOperation()
  async delete(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Req() req: Request): Promise<Record<string, never>> {
    await this.audit.run(identity, req, () => this.workspaces.deleteWorkspace(identity, parseOrThrow(idParamSchema, params, ['path']).id), undefined, resource('workspace', params.id));
    return {};
  }
}

/** Members of the organization, pending invitations and basic-auth users. */
@Controller('orgs/current')
@OrganizationScope()
export class OrgMembersController {
  constructor(
    private readonly roles: RolesService,
    private readonly orgs: OrganizationService,
    private readonly orgMembers: OrgMembersService,
    private readonly audit: AdminAudit,
  ) {}

  @Get()
  organization(@CurrentIdentity() identity: Identity): Promise<Organization> {
    return this.orgs.getOrganization(identity);
  }

  @Patch()
  @TrackedOperation()
  updateOrganization(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<Organization> {
    return this.audit.run(identity,
      req,
      () => this.orgs.updateOrganization(identity, parseOrThrow(organizationUpdateSchema, body ?? {}, ['body'])),
      (o) => [{ type: 'organization', id: o.id }],
    );
  }

  @Get('members')
  list(@CurrentIdentity() identity: Identity): Promise<OrgMembers> {
    return this.orgMembers.listOrgMembers(identity);
  }

  @Post('members')
  @TrackedOperation()
  @HttpCode(200)
  invite(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<PendingMember> {
    return this.audit.run(identity,
      req,
      () => this.orgMembers.inviteToOrg(identity, parseOrThrow(orgInviteSchema, body ?? {}, ['body'])),
      (p) => [{ type: 'pending_member', id: p.id }],
    );
  }

  @Post('members/basic')
  @TrackedOperation()
  @HttpCode(200)
  addBasic(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<OrgMember[]> {
    return this.audit.run(identity,
      req,
      () => this.orgMembers.addBasicAuthUsers(identity, parseOrThrow(basicAuthUsersSchema, body ?? {}, ['body'])),
      (list) => list.map((u) => ({ type: 'user', id: u.user_id })),
    );
  }

  @Delete('members/pending/:id')
  @TrackedOperation()
  async deletePending(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Req() req: Request): Promise<Record<string, never>> {
    await this.audit.run(identity,
      req,
      () => this.orgMembers.deletePendingMember(identity, parseOrThrow(idParamSchema, params, ['path']).id),
      undefined,
      resource('pending_member', params.id),
    );
    return {};
  }

  @Patch('members/:user_id')
  @TrackedOperation()
  update(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Body() body: unknown, @Req() req: Request): Promise<OrgMember> {
    return this.audit.run(identity,
      req,
      () => {
        const { user_id } = parseOrThrow(userIdParamSchema, params, ['path']);
        return this.orgMembers.updateOrgMember(identity, user_id, parseOrThrow(memberRoleUpdateSchema, body ?? {}, ['body']));
      },
      undefined,
      resource('user', params.user_id),
    );
  }

  @Delete('members/:user_id')
  @TrackedOperation()
  async delete(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Req() req: Request): Promise<Record<string, never>> {
    await this.audit.run(identity,
      req,
      () => this.orgMembers.deleteOrgMember(identity, parseOrThrow(userIdParamSchema, params, ['path']).user_id),
      undefined,
      resource('user', params.user_id),
    );
    return {};
  }

  @Get('roles')
  listRoles(@CurrentIdentity() identity: Identity): Promise<Role[]> {
    return this.roles.listRoles(identity);
  }

  @Post('roles')
  @TrackedOperation()
  @HttpCode(200)
  createRole(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<Role> {
    return this.audit.run(identity,
      req,
      () => this.roles.createRole(identity, parseOrThrow(roleCreateSchema, body ?? {}, ['body'])),
      (r) => [{ type: 'role', id: r.id }],
    );
  }

  @Patch('roles/:id')
  @TrackedOperation()
  updateRole(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Body() body: unknown, @Req() req: Request): Promise<Role> {
    return this.audit.run(identity,
      req,
      () => {
        const { id } = parseOrThrow(idParamSchema, params, ['path']);
        return this.roles.updateRole(identity, id, parseOrThrow(roleUpdateSchema, body ?? {}, ['body']));
      },
      undefined,
      resource('role', params.id),
    );
  }

  @Delete('roles/:id')
  @TrackedOperation()
  async deleteRole(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Req() req: Request): Promise<Record<string, never>> {
    await this.audit.run(identity, req, () => this.roles.deleteRole(identity, parseOrThrow(idParamSchema, params, ['path']).id), undefined, resource('role', params.id));
    return {};
  }
}

/**
 * Invitations addressed to the calling user (any organization): the invited user claims one and
 * joins that organization. Audited in the inviting organization as the member update its route-table entry
 * names (the spec's tracked operations have no separate "claim"; a claim makes the invitee a member with a role).
 */
@Controller('orgs/pending')
@OrganizationScope()
export class PendingInvitationsController {
  constructor(
    private readonly orgMembers: OrgMembersService,
    private readonly audit: AdminAudit,
  ) {}

  @Get()
  list(@CurrentIdentity() identity: Identity): Promise<PendingInvitation[]> {
    return this.orgMembers.listMyInvitations(identity);
  }

  @Post(':id/claim')
  @TrackedOperation()
  @HttpCode(200)
  claim(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Req() req: Request): Promise<LoginResponse> {
    return this.audit
      .runIn(
        identity,
        req,
        () => this.orgMembers.claimInvitation(identity, parseOrThrow(idParamSchema, params, ['path']).id),
        (r) => r.organization_id,
        (r) => [
          { type: 'user', id: r.member.user_id },
          { type: 'pending_member', id: params.id },
        ],
      )
      .then((r) => r.session);
  }

  /** The invited user declines: recorded in the inviting organization, as the deletion of a pending member. */
  @Delete(':id')
  @TrackedOperation()
  async decline(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Req() req: Request): Promise<Record<string, never>> {
    await this.audit.runIn(identity,
      req,
      () => this.orgMembers.declineInvitation(identity, parseOrThrow(idParamSchema, params, ['path']).id),
      (r) => r.organization_id,
      () => [{ type: 'pending_member', id: params.id }],
    );
    return {};
  }
}
