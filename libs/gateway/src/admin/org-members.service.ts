import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { In, IsNull, type EntityManager } from 'typeorm';
import type { Identity, LoginResponse, OrgMember, OrgMembers, PendingInvitation, PendingMember } from '@th/contracts';
import { assertPermissions, signSessionToken } from '@th/auth';
import { badRequest, conflict, forbidden, notFound } from '@th/platform';
import { ApiKeyEntity, OrganizationEntity, OrgInvitationEntity, OrgMemberEntity, UserEntity, WorkspaceEntity, WorkspaceMemberEntity } from '../identity/identity.entities';
import { hashPassword } from '../identity/identity.service';
import { BUILTIN_ROLES } from '../identity/roles';
import { AdminStore, type AdminOptions } from './admin-store';

/** Days an invitation can be claimed after it was sent (then the administrator invites again). */
export const INVITATION_TTL_DAYS = 7;

const toPending = (i: OrgInvitationEntity): PendingMember => ({
  id: i.id,
  email: i.email,
  role_id: i.role_id,
  workspace_ids: i.workspace_ids,
  workspace_role_id: i.workspace_role_id,
  created_at: i.created_at.toISOString(),
});

/** Organization members, password users and invitations (sent, listed, claimed, declined). */
@Injectable()
export class OrgMembersService {
  constructor(
    private readonly store: AdminStore,
    private readonly opts: AdminOptions,
  ) {}

  async listOrgMembers(identity: Identity): Promise<OrgMembers> {
    assertPermissions(identity, ['organization:read']);
    const members = await this.store.ds
      .getRepository(OrgMemberEntity)
      .find({ where: { organization_id: identity.organization_id }, order: { created_at: 'ASC' } });
    const users = members.length ? await this.store.ds.getRepository(UserEntity).find({ where: { id: In(members.map((x) => x.user_id)) } }) : [];
    const byId = new Map(users.map((u) => [u.id, u]));
    const pending = await this.store.ds.getRepository(OrgInvitationEntity).find({ where: { organization_id: identity.organization_id }, order: { created_at: 'ASC' } });
    return {
      members: members.map((x): OrgMember => ({
        user_id: x.user_id,
        email: byId.get(x.user_id)?.email ?? '',
        full_name: byId.get(x.user_id)?.full_name ?? null,
        role_id: x.role_id,
        created_at: x.created_at.toISOString(),
      })),
      pending: pending.map(toPending),
    };
  }

  async inviteToOrg(identity: Identity, body: { email: string; role_id?: string; workspace_ids?: string[]; workspace_role_id?: string }): Promise<PendingMember> {
    assertPermissions(identity, ['organization:manage']);
    const email = body.email.toLowerCase();
    return this.store.write(async (m) => {
      const role = await this.store.role(m, identity.organization_id, body.role_id ?? BUILTIN_ROLES.organizationUser.id, 'organization');
      const wsRole = body.workspace_role_id ? await this.store.role(m, identity.organization_id, body.workspace_role_id, 'workspace') : null;
      for (const wsId of body.workspace_ids ?? []) await this.store.orgWorkspace(m, identity, wsId);
      const user = await m.findOne(UserEntity, { where: { email } });
      if (user && (await m.count(OrgMemberEntity, { where: { organization_id: identity.organization_id, user_id: user.id } })) > 0) {
        throw conflict(`${email} is already a member of the organization`);
      }
      if ((await m.count(OrgInvitationEntity, { where: { organization_id: identity.organization_id, email } })) > 0) throw conflict(`${email} is already invited`);
      const invite = Object.assign(new OrgInvitationEntity(), {
        id: randomUUID(),
        organization_id: identity.organization_id,
        email,
        role_id: role.id,
        workspace_ids: [...new Set(body.workspace_ids ?? [])],
        workspace_role_id: wsRole?.id ?? null,
        created_at: new Date(),
      });
      await m.save(invite);
      return toPending(invite);
    });
  }

  /**
   * Creates users who sign in with a password (POST /auth/login) as members of the organization.
   * A pending invitation for the same email is consumed: its roles and workspaces apply.
   */
  async addBasicAuthUsers(identity: Identity, body: { users: { email: string; full_name?: string; password: string; role_id?: string }[] }): Promise<OrgMember[]> {
    assertPermissions(identity, ['organization:manage']);
    const emails = body.users.map((u) => u.email.toLowerCase());
    if (new Set(emails).size !== emails.length) throw badRequest('Each email may appear once');
    const hashes = await Promise.all(body.users.map((u) => hashPassword(u.password)));
    return this.store.write(async (m) => {
      const out: OrgMember[] = [];
      for (const [i, u] of body.users.entries()) {
        const email = emails[i];
        if ((await m.count(UserEntity, { where: { email } })) > 0) throw conflict(`A user with email ${email} already exists`);
        const invite = await m.findOne(OrgInvitationEntity, { where: { organization_id: identity.organization_id, email } });
        const role = await this.store.role(m, identity.organization_id, u.role_id ?? invite?.role_id ?? BUILTIN_ROLES.organizationUser.id, 'organization');
        const now = new Date();
        const user = Object.assign(new UserEntity(), { id: randomUUID(), email, full_name: u.full_name ?? null, password_hash: hashes[i], created_at: now });
        await m.save(user);
        await m.save(Object.assign(new OrgMemberEntity(), { organization_id: identity.organization_id, user_id: user.id, role_id: role.id, created_at: now }));
        if (invite) {
          for (const wsId of invite.workspace_ids) {
            await m.save(
              Object.assign(new WorkspaceMemberEntity(), { workspace_id: wsId, user_id: user.id, role_id: invite.workspace_role_id ?? BUILTIN_ROLES.workspaceViewer.id, created_at: now }),
            );
          }
          await m.delete(OrgInvitationEntity, { id: invite.id });
        }
        out.push({ user_id: user.id, email, full_name: user.full_name, role_id: role.id, created_at: now.toISOString() });
      }
      return out;
    });
  }

  async updateOrgMember(identity: Identity, userId: string, body: { role_id: string }): Promise<OrgMember> {
    assertPermissions(identity, ['organization:manage']);
    return this.store.write(async (m) => {
      const member = await m.findOne(OrgMemberEntity, { where: { organization_id: identity.organization_id, user_id: userId } });
      if (!member) throw notFound('Organization member');
      const role = await this.store.role(m, identity.organization_id, body.role_id, 'organization');
      member.role_id = role.id;
      await m.save(member);
      const user = await m.findOneOrFail(UserEntity, { where: { id: userId } });
      return { user_id: userId, email: user.email, full_name: user.full_name, role_id: role.id, created_at: member.created_at.toISOString() };
    });
  }

  /** Removes the member, their workspace memberships in this organization and their tokens here. */
  async deleteOrgMember(identity: Identity, userId: string): Promise<void> {
    assertPermissions(identity, ['organization:manage']);
    await this.store.write(async (m) => {
      const member = await m.findOne(OrgMemberEntity, { where: { organization_id: identity.organization_id, user_id: userId } });
      if (!member) throw notFound('Organization member');
      const workspaces = await m.find(WorkspaceEntity, { where: { organization_id: identity.organization_id } });
      if (workspaces.length) await m.delete(WorkspaceMemberEntity, { user_id: userId, workspace_id: In(workspaces.map((w) => w.id)) });
      await m.update(ApiKeyEntity, { organization_id: identity.organization_id, user_id: userId, revoked_at: IsNull() }, { revoked_at: new Date() });
      await m.delete(OrgMemberEntity, { organization_id: identity.organization_id, user_id: userId });
    });
  }

  /** The calling user's invitation by id: unknown ids and invitations for other users look alike (404). */
  private async invitationFor(m: EntityManager, identity: Identity, id: string, lock: boolean): Promise<{ invite: OrgInvitationEntity; user: UserEntity }> {
    if (!identity.user_id) throw forbidden('Only a user can answer an invitation: sign in (POST /api/v1/auth/login) or use a personal access token');
    // Locked, so two concurrent answers to one invitation cannot both succeed.
    const invite = await m.findOne(OrgInvitationEntity, { where: { id }, ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}) });
    const user = await m.findOne(UserEntity, { where: { id: identity.user_id } });
    if (!invite || !user || invite.email !== user.email.toLowerCase()) throw notFound('Invitation');
    return { invite, user };
  }

  /** Invitations addressed to the calling user's email that can still be claimed, oldest first. */
  async listMyInvitations(identity: Identity): Promise<PendingInvitation[]> {
    if (!identity.user_id) throw forbidden('Only a user has invitations: sign in (POST /api/v1/auth/login) or use a personal access token');
    const user = await this.store.ds.getRepository(UserEntity).findOne({ where: { id: identity.user_id } });
    if (!user) return [];
    const notBefore = new Date(Date.now() - INVITATION_TTL_DAYS * 86_400_000);
    const invites = (await this.store.ds.getRepository(OrgInvitationEntity).find({ where: { email: user.email.toLowerCase() }, order: { created_at: 'ASC' } })).filter(
      (i) => i.created_at > notBefore,
    );
    const orgs = invites.length ? await this.store.ds.getRepository(OrganizationEntity).find({ where: { id: In([...new Set(invites.map((i) => i.organization_id))]) } }) : [];
    const names = new Map(orgs.map((o) => [o.id, o.name]));
    return invites.map((i) => ({
      ...toPending(i),
      organization_id: i.organization_id,
      organization_name: names.get(i.organization_id) ?? '',
      expires_at: new Date(i.created_at.getTime() + INVITATION_TTL_DAYS * 86_400_000).toISOString(),
    }));
  }

  /** The invited user declines: the invitation is deleted. Returns the inviting organization. */
  async declineInvitation(identity: Identity, id: string): Promise<{ organization_id: string }> {
    return this.store.write(async (m) => {
      const { invite } = await this.invitationFor(m, identity, id, true);
      await m.delete(OrgInvitationEntity, { id: invite.id });
      return { organization_id: invite.organization_id };
    });
  }

  /**
   * The invited user accepts an invitation: they become a member of the inviting organization with the
   * invitation's role (and of its workspaces, those that still exist, with its workspace role), the
   * invitation is consumed, and a session for that organization is returned. Only the user whose email
   * the invitation names may claim it; any other caller, an unknown id and an already-claimed (consumed)
   * invitation all get the same 404, so invitation ids cannot be probed.
   */
  async claimInvitation(identity: Identity, id: string): Promise<{ session: LoginResponse; member: OrgMember; organization_id: string }> {
    if (!identity.user_id) throw forbidden('Only a user can answer an invitation: sign in (POST /api/v1/auth/login) or use a personal access token');
    const secret = this.opts.sessionSecret;
    if (!secret) throw badRequest('Sessions are not enabled (no SESSION_SECRET): a claimed invitation is used through a session');
    const userId = identity.user_id;
    const out = await this.store.write(async (m) => {
      const { invite, user } = await this.invitationFor(m, identity, id, true);
      const expires = invite.created_at.getTime() + INVITATION_TTL_DAYS * 86_400_000;
      if (expires <= Date.now()) throw badRequest(`The invitation expired at ${new Date(expires).toISOString()}; ask an administrator to invite you again`);
      if ((await m.count(OrgMemberEntity, { where: { organization_id: invite.organization_id, user_id: userId } })) > 0) {
        throw conflict('You are already a member of this organization');
      }
      const now = new Date();
      await m.save(Object.assign(new OrgMemberEntity(), { organization_id: invite.organization_id, user_id: userId, role_id: invite.role_id, created_at: now }));
      const workspaces = invite.workspace_ids.length ? await m.find(WorkspaceEntity, { where: { id: In(invite.workspace_ids), organization_id: invite.organization_id } }) : [];
      for (const ws of workspaces) {
        await m.save(
          Object.assign(new WorkspaceMemberEntity(), { workspace_id: ws.id, user_id: userId, role_id: invite.workspace_role_id ?? BUILTIN_ROLES.workspaceViewer.id, created_at: now }),
        );
      }
      await m.delete(OrgInvitationEntity, { id: invite.id });
      const member: OrgMember = { user_id: userId, email: user.email, full_name: user.full_name, role_id: invite.role_id, created_at: now.toISOString() };
      return { member, organization_id: invite.organization_id };
    });
    const token = await signSessionToken({ user_id: userId, organization_id: out.organization_id }, secret, this.opts.sessionTtlSeconds);
    return { ...out, session: { access_token: token, token_type: 'bearer', expires_in: this.opts.sessionTtlSeconds } };
  }

  async deletePendingMember(identity: Identity, id: string): Promise<void> {
    assertPermissions(identity, ['organization:manage']);
    await this.store.write(async (m) => {
      const res = await m.delete(OrgInvitationEntity, { id, organization_id: identity.organization_id });
      if (!res.affected) throw notFound('Pending member');
    });
  }
}
