import type { Request } from 'express';
import type { DataSource } from 'typeorm';
import type { Identity } from '@th/contracts';
import { openServiceDataSource } from '@th/database';
import { DomainError } from '@th/platform';
import { createTestDatabase } from '@th/testing';
import { createAdminServices, type AdminServices } from '../admin/admin.services';
import { GATEWAY_ENTITIES, GATEWAY_MIGRATIONS } from '../index';
import { ApiKeyEntity } from './identity.entities';
import { IdentityService } from './identity.service';

const req = (headers: Record<string, string>): Request => ({ headers }) as unknown as Request;
const CACHE_MS = 5_000;

async function status(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return err instanceof DomainError ? `${err.code}: ${err.message}` : `thrown: ${(err as Error).message}`;
  }
}

/** The resolved-identity cache of the gateway (real PostgreSQL): hits, and revocation still within the documented bound. */
describe('IdentityService resolved-identity cache', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let ds: DataSource;
  let ids: IdentityService;
  let admin: AdminServices;
  let org: Awaited<ReturnType<IdentityService['createOrganization']>>;
  let adminId: Identity;

  beforeAll(async () => {
    db = await createTestDatabase('th_gw_cache');
    ds = await openServiceDataSource({ url: db.url, schema: 'gateway', entities: GATEWAY_ENTITIES, migrations: GATEWAY_MIGRATIONS });
    ids = new IdentityService(ds, {});
    admin = createAdminServices(ds, ids, { sessionTtlSeconds: 3600, workspaceSecretsKey: 'test-workspace-secrets-key' });
    org = await ids.createOrganization({ name: 'cache' });
    adminId = (await ids.resolve(req({ 'x-api-key': org.api_key })))!;
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('a repeated key resolves to the same identity object; the tenant header is part of the cache key', async () => {
    const a = await ids.resolve(req({ 'x-api-key': org.api_key }));
    const b = await ids.resolve(req({ 'x-api-key': org.api_key }));
    expect(b).toBe(a);
    expect(a?.tenant_id).toBe(org.workspace_id);
    const named = await ids.resolve(req({ 'x-api-key': org.api_key, 'x-tenant-id': org.workspace_id }));
    expect(named).not.toBe(a);
    expect(named).toEqual(a);
    // Errors are not cached as identities: a foreign workspace is refused every time.
    const foreign = '00000000-0000-4000-8000-000000000099';
    expect(await status(ids.resolve(req({ 'x-api-key': org.api_key, 'x-tenant-id': foreign })))).toMatch(/^forbidden/);
    expect(await status(ids.resolve(req({ 'x-api-key': org.api_key, 'x-tenant-id': foreign })))).toMatch(/^forbidden/);
  });

  it('a revocation through this process takes effect at once', async () => {
    const k = await admin.credentials.createKey(adminId, 'api_key', { description: 'cached then revoked' });
    expect((await ids.resolve(req({ 'x-api-key': k.key })))?.credential_id).toBe(k.id);
    await admin.credentials.deleteKey(adminId, 'api_key', k.id);
    expect(await status(ids.resolve(req({ 'x-api-key': k.key })))).toBe('unauthorized: API key revoked');
  });

  it('a revocation by another replica (a direct database write) takes effect within the 5 s cache bound', async () => {
    const k = await admin.credentials.createKey(adminId, 'api_key', { description: 'revoked elsewhere' });
    const first = await ids.resolve(req({ 'x-api-key': k.key }));
    expect(first?.credential_id).toBe(k.id);
    await ds.getRepository(ApiKeyEntity).update({ id: k.id }, { revoked_at: new Date() });
    // Keep the key hot across the bound: every resolution is a cache hit or a fresh lookup, never an entry older than the bound.
    const deadline = Date.now() + CACHE_MS + 1_000;
    let last = 'ok';
    while (Date.now() < deadline) {
      last = await status(ids.resolve(req({ 'x-api-key': k.key })));
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(last).toBe('unauthorized: API key revoked');
  });

  it('a key expiring while its identity is cached is refused from its expiry on', async () => {
    const k = await admin.credentials.createKey(adminId, 'api_key', { description: 'expiring' });
    await ds.getRepository(ApiKeyEntity).update({ id: k.id }, { expires_at: new Date(Date.now() + 1_000) });
    ids.invalidate();
    expect((await ids.resolve(req({ 'x-api-key': k.key })))?.credential_id).toBe(k.id);
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await status(ids.resolve(req({ 'x-api-key': k.key })))).toBe('unauthorized: API key expired');
  });
});
