import { Injectable } from '@nestjs/common';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Request } from 'express';
import { DataSource, type Repository } from 'typeorm';
import type { Identity } from '@th/contracts';
import type { IdentityResolver } from '@th/auth';
import { DomainError, ErrorCode, forbidden, unauthorized } from '@th/platform';
import { ApiKeyEntity, OrganizationEntity, WorkspaceEntity } from './identity.entities';

export const WORKSPACE_PERMISSIONS = ['workspace:read', 'workspace:write', 'runs:read', 'runs:write', 'projects:read', 'projects:write'];

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function generateApiKey(): string {
  return `th_${randomBytes(24).toString('base64url')}`;
}

interface CachedKey {
  key: ApiKeyEntity;
  org: OrganizationEntity;
  at: number;
}

/** API keys, organizations and workspaces: who is calling and on which workspace. */
@Injectable()
export class IdentityService implements IdentityResolver {
  private readonly keys: Repository<ApiKeyEntity>;
  private readonly orgs: Repository<OrganizationEntity>;
  private readonly workspaces: Repository<WorkspaceEntity>;
  private readonly cache = new Map<string, CachedKey>();
  private readonly workspaceOrg = new Map<string, string>();

  constructor(private readonly ds: DataSource) {
    this.keys = ds.getRepository(ApiKeyEntity);
    this.orgs = ds.getRepository(OrganizationEntity);
    this.workspaces = ds.getRepository(WorkspaceEntity);
  }

  async resolve(req: Request): Promise<Identity | null> {
    const header = req.headers['x-api-key'];
    const auth = req.headers.authorization;
    const raw = typeof header === 'string' ? header : auth?.startsWith('Bearer ') ? auth.slice(7) : undefined;
    if (!raw) return null;
    const found = await this.lookup(raw.trim());
    if (!found) throw unauthorized('Invalid API key');
    const { key, org } = found;
    if (key.revoked_at || (key.expires_at && key.expires_at.getTime() < Date.now())) throw unauthorized('API key expired or revoked');
    const tenantHeader = req.headers['x-tenant-id'];
    const requested = typeof tenantHeader === 'string' && tenantHeader.length > 0 ? tenantHeader.toLowerCase() : undefined;
    let tenantId: string;
    if (key.workspace_id) {
      if (requested && requested !== key.workspace_id) throw forbidden('This API key cannot act in the requested workspace');
      tenantId = key.workspace_id;
    } else {
      if (!requested) throw new DomainError(ErrorCode.Forbidden, '{"error":"org_scoped_key_requires_workspace"}');
      if ((await this.organizationOf(requested)) !== key.organization_id) throw forbidden('This API key cannot act in the requested workspace');
      tenantId = requested;
    }
    return {
      organization_id: key.organization_id,
      tenant_id: tenantId,
      user_id: key.user_id,
      credential_id: key.id,
      credential_type: key.kind,
      plan: org.plan,
      permissions: key.permissions,
    };
  }

  private async lookup(raw: string): Promise<CachedKey | null> {
    const hash = hashApiKey(raw);
    const hit = this.cache.get(hash);
    if (hit && Date.now() - hit.at < 30_000) return hit;
    const key = await this.keys.findOne({ where: { key_hash: hash } });
    if (!key) return null;
    const org = await this.orgs.findOneOrFail({ where: { id: key.organization_id } });
    const entry = { key, org, at: Date.now() };
    this.cache.set(hash, entry);
    if (this.cache.size > 10_000) this.cache.clear();
    return entry;
  }

  private async organizationOf(workspaceId: string): Promise<string | undefined> {
    if (!/^[0-9a-f-]{36}$/.test(workspaceId)) return undefined;
    const cached = this.workspaceOrg.get(workspaceId);
    if (cached) return cached;
    const ws = await this.workspaces.findOne({ where: { id: workspaceId } });
    if (ws) this.workspaceOrg.set(workspaceId, ws.organization_id);
    return ws?.organization_id;
  }

  /** Creates an organization with one workspace and a workspace API key (the value is returned once). */
  async createOrganization(opts: { name: string; plan?: OrganizationEntity['plan']; apiKey?: string }): Promise<{
    organization_id: string;
    workspace_id: string;
    api_key: string;
    api_key_id: string;
  }> {
    const apiKey = opts.apiKey ?? generateApiKey();
    return this.ds.transaction(async (m) => {
      const now = new Date();
      const org = Object.assign(new OrganizationEntity(), { id: randomUUID(), name: opts.name, plan: opts.plan ?? 'enterprise', is_personal: false, created_at: now });
      await m.save(org);
      const ws = Object.assign(new WorkspaceEntity(), { id: randomUUID(), organization_id: org.id, name: 'Default', created_at: now });
      await m.save(ws);
      const key = Object.assign(new ApiKeyEntity(), {
        id: randomUUID(),
        organization_id: org.id,
        workspace_id: ws.id,
        user_id: null,
        kind: 'service_key' as const,
        key_hash: hashApiKey(apiKey),
        prefix: apiKey.slice(0, 8),
        description: 'bootstrap key',
        permissions: ['organization:manage', ...WORKSPACE_PERMISSIONS],
        created_at: now,
        expires_at: null,
        revoked_at: null,
      });
      await m.save(key);
      return { organization_id: org.id, workspace_id: ws.id, api_key: apiKey, api_key_id: key.id };
    });
  }

  /** Seeds the bootstrap organization, workspace and key unless a key with that value exists. */
  async bootstrap(apiKey: string): Promise<{ organization_id: string; workspace_id: string; created: boolean }> {
    const existing = await this.keys.findOne({ where: { key_hash: hashApiKey(apiKey) } });
    if (existing) return { organization_id: existing.organization_id, workspace_id: existing.workspace_id ?? '', created: false };
    const r = await this.createOrganization({ name: 'Default', plan: 'enterprise', apiKey });
    return { organization_id: r.organization_id, workspace_id: r.workspace_id, created: true };
  }

  async ping(): Promise<void> {
    await this.ds.query('SELECT 1');
  }
}
