import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import type { SessionCreate, SessionInfo, LoginResponse } from '@th/contracts';
import { signSessionToken, verifySessionToken } from '@th/auth';
import { unauthorized } from '@th/platform';
import { OrgMemberEntity, UserEntity, WorkspaceEntity, WorkspaceMemberEntity } from '../identity/identity.entities';
import { verifyPassword } from '../identity/identity.service';
import { AdminStore, type AdminOptions } from './admin-store';

/** Bearer sessions (login) and the web app's cookie sessions. */
@Injectable()
export class SessionsService {
  constructor(
    private readonly store: AdminStore,
    private readonly opts: AdminOptions,
  ) {}

  async login(body: { email: string; password: string; organization_id?: string }): Promise<LoginResponse> {
    if (!this.opts.sessionSecret) throw unauthorized('Sessions are not enabled (no SESSION_SECRET)');
    const user = await this.store.ds.getRepository(UserEntity).findOne({ where: { email: body.email.toLowerCase() } });
    if (!user?.password_hash || !(await verifyPassword(body.password, user.password_hash))) throw unauthorized('Invalid email or password');
    // A user of several organizations (e.g. after claiming an invitation) names the one the session acts in.
    const member = await this.store.ds.getRepository(OrgMemberEntity).findOne({
      where: { user_id: user.id, ...(body.organization_id ? { organization_id: body.organization_id.toLowerCase() } : {}) },
      order: { created_at: 'ASC' },
    });
    if (!member) throw unauthorized(body.organization_id ? 'The user is not a member of that organization' : 'The user is not a member of any organization');
    const token = await signSessionToken({ user_id: user.id, organization_id: member.organization_id }, this.opts.sessionSecret, this.opts.sessionTtlSeconds);
    return { access_token: token, token_type: 'bearer', expires_in: this.opts.sessionTtlSeconds };
  }

  /**
   * A session for the web app's cookie: from an API key (acting as that key), a one-time sign-in token
   * (the key it was issued for) or a user's email and password (acting as the user, in the first
   * workspace the user belongs to). The token is the cookie's value; `info` is what the app is told.
   */
  async createSession(body: SessionCreate): Promise<{ token: string; info: SessionInfo }> {
    const secret = this.opts.sessionSecret;
    if (!secret) throw unauthorized('Sessions are not enabled (no SESSION_SECRET)');
    if ('email' in body) {
      const { access_token } = await this.login(body);
      const claims = await verifySessionToken(access_token, secret);
      if (!claims) throw unauthorized('Invalid email or password');
      const tenant = await this.defaultWorkspace(claims.user_id, claims.organization_id);
      const token = await signSessionToken({ ...claims, ...(tenant ? { tenant_id: tenant } : {}) }, secret, this.opts.sessionTtlSeconds);
      return { token, info: { organization_id: claims.organization_id, tenant_id: tenant, user_id: claims.user_id, credential_type: 'session' } };
    }
    let key;
    if ('api_key' in body) key = await this.store.identities.keyForSession({ raw: body.api_key });
    else {
      const hash = this.store.identities.consumeSignInToken(body.sign_in_token);
      if (!hash) throw unauthorized('This sign-in link was used already or has expired');
      key = await this.store.identities.keyForSession({ hash });
    }
    const token = await signSessionToken(
      { user_id: key.user_id ?? key.id, organization_id: key.organization_id, credential_id: key.id },
      secret,
      this.opts.sessionTtlSeconds,
    );
    return { token, info: { organization_id: key.organization_id, tenant_id: key.workspace_id ?? '', user_id: key.user_id, credential_type: key.kind } };
  }

  /** The first workspace of the organization the user joined, else the organization's first (for its admins); '' when none. */
  private async defaultWorkspace(userId: string, orgId: string): Promise<string> {
    const memberships = await this.store.ds.getRepository(WorkspaceMemberEntity).find({ where: { user_id: userId }, order: { created_at: 'ASC' } });
    const inOrg = memberships.length
      ? new Set((await this.store.ds.getRepository(WorkspaceEntity).find({ where: { id: In(memberships.map((m) => m.workspace_id)), organization_id: orgId } })).map((w) => w.id))
      : new Set<string>();
    const joined = memberships.find((m) => inOrg.has(m.workspace_id));
    if (joined) return joined.workspace_id;
    const first = await this.store.ds.getRepository(WorkspaceEntity).findOne({ where: { organization_id: orgId }, order: { created_at: 'ASC' } });
    return first?.id ?? '';
  }

  get sessionTtlSeconds(): number {
    return this.opts.sessionTtlSeconds;
  }
}
