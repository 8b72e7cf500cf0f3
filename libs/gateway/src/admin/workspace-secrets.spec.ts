import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { Identity } from '@th/contracts';
import { openServiceDataSource } from '@th/database';
import { SecretCipher } from '@th/platform';
import { createTestDatabase } from '@th/testing';
import { GATEWAY_ENTITIES, GATEWAY_MIGRATIONS } from '../index';
import { IdentityService } from '../identity/identity.service';
import { createAdminServices, type AdminServices } from './admin.services';

const KEY = 'test-workspace-secrets-key-0123456789';
const VALUE = `sk-live-${randomUUID()}`;

describe('workspace secrets at rest (real PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let ds: DataSource;
  let admin: AdminServices;
  let caller: Identity;
  let workspaceId: string;

  beforeAll(async () => {
    db = await createTestDatabase('th_gateway');
    ds = await openServiceDataSource({ url: db.url, schema: 'gateway', entities: GATEWAY_ENTITIES, migrations: GATEWAY_MIGRATIONS });
    const ids = new IdentityService(ds, {});
    admin = createAdminServices(ds, ids, { sessionTtlSeconds: 3600, workspaceSecretsKey: KEY });
    const org = await ids.createOrganization({ name: 'secrets' });
    workspaceId = org.workspace_id;
    caller = (await ids.resolve({ headers: { 'x-api-key': org.api_key } } as never))!;
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  const rawRows = async () =>
    (await ds.query(`SELECT "key", "value", "sealed" FROM "gateway"."workspace_secrets" WHERE "workspace_id" = $1 ORDER BY "key"`, [workspaceId])) as {
      key: string;
      value: string;
      sealed: boolean;
    }[];

  it('stores a value sealed, never in plain text, and answers with key names only', async () => {
    const answer = await admin.secrets.updateSecrets(caller, [{ key: 'OPENAI_API_KEY', value: VALUE }]);
    expect(answer).toEqual([{ key: 'OPENAI_API_KEY', updated_at: expect.any(String) }]);
    expect(JSON.stringify(await admin.secrets.listSecrets(caller))).not.toContain(VALUE);
    const [row] = await rawRows();
    expect(row.sealed).toBe(true);
    expect(row.value).not.toContain(VALUE);
    expect(row.value).not.toContain(Buffer.from(VALUE).toString('base64'));
    expect(new SecretCipher(KEY).openText(row.value)).toBe(VALUE);
    // The whole table as PostgreSQL keeps it holds no plain copy either.
    const dump = (await ds.query(`SELECT string_agg(t::text, '') AS all FROM "gateway"."workspace_secrets" t`)) as { all: string }[];
    expect(dump[0].all).not.toContain(VALUE);
  });

  it('seals rows stored in plain text before sealing existed, once', async () => {
    const legacy = `legacy-${randomUUID()}`;
    await ds.query(`INSERT INTO "gateway"."workspace_secrets" ("workspace_id", "key", "value", "updated_at") VALUES ($1, 'LEGACY', $2, now())`, [workspaceId, legacy]);
    expect((await rawRows()).find((r) => r.key === 'LEGACY')).toMatchObject({ value: legacy, sealed: false });
    expect(await admin.secrets.sealPlaintextSecrets()).toBe(1);
    const row = (await rawRows()).find((r) => r.key === 'LEGACY');
    expect(row?.sealed).toBe(true);
    expect(row?.value).not.toContain(legacy);
    expect(new SecretCipher(KEY).openText(row?.value ?? '')).toBe(legacy);
    expect(await admin.secrets.sealPlaintextSecrets()).toBe(0);
  });
});
