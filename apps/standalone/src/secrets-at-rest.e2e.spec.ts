import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { AUDIT_ENTITIES, AUDIT_MIGRATIONS, AuditRepository, AuditStore, ChainHasher, UNKEYED_CHAIN_HASHING, verifyChain } from '@th/audit';
import { openServiceDataSource } from '@th/database';
import { ExportsRepository } from '@th/export-worker';
import { GATEWAY_ENTITIES, GATEWAY_MIGRATIONS, IdentityService } from '@th/gateway';
import { SecretCipher } from '@th/platform';
import { auditRecord, createTestDatabase } from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

/**
 * Secrets and keys at rest, through the standalone service on a database prepared as an earlier
 * version left it: a workspace secret in plain text and an audit chain hashed without a key.
 */
const DATA_DIR = join(tmpdir(), `th-standalone-${process.pid}`); // the harness's (one per jest worker)
const GENERATED = ['session-secret', 'control-plane-secrets-key', 'export-encryption-key', 'workspace-secrets-key', 'audit-chain-key'];
const mode = (path: string) => statSync(path).mode & 0o777;

/** An event of an earlier version's chain. */
const record = (org: string) => auditRecord(org, { user_id: null, resources: [] });

describe('secrets and keys at rest (standalone)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let svc: TestStandalone;
  let sql: Client;
  const legacyOrg = randomUUID();
  const legacySecret = `legacy-plain-${randomUUID()}`;
  let legacyWorkspace: string;

  beforeAll(async () => {
    db = await createTestDatabase('th_at_rest');
    // What an earlier version stored: an audit chain without a key, a workspace secret in plain text.
    const auditDb = await openServiceDataSource({ url: db.url, schema: 'audit', entities: AUDIT_ENTITIES, migrations: AUDIT_MIGRATIONS });
    await new AuditStore(new AuditRepository(auditDb), UNKEYED_CHAIN_HASHING).append([record(legacyOrg), record(legacyOrg), record(legacyOrg)]);
    await auditDb.destroy();
    const gatewayDb = await openServiceDataSource({ url: db.url, schema: 'gateway', entities: GATEWAY_ENTITIES, migrations: GATEWAY_MIGRATIONS });
    legacyWorkspace = (await new IdentityService(gatewayDb).createOrganization({ name: 'legacy' })).workspace_id;
    await gatewayDb.query(`INSERT INTO "gateway"."workspace_secrets" ("workspace_id", "key", "value", "updated_at") VALUES ($1, 'LEGACY', $2, now())`, [legacyWorkspace, legacySecret]);
    await gatewayDb.destroy();
    // A data folder as earlier versions left it: open to others, a key file readable by all, no chain key yet.
    if (existsSync(DATA_DIR)) {
      chmodSync(DATA_DIR, 0o755);
      if (existsSync(join(DATA_DIR, 'session-secret'))) chmodSync(join(DATA_DIR, 'session-secret'), 0o644);
      rmSync(join(DATA_DIR, 'audit-chain-key'), { force: true });
    }
    svc = await startTestStandalone({ DATABASE_URL: db.url, DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: 'true' });
    sql = new Client({ connectionString: db.url });
    await sql.connect();
  }, 120_000);
  afterAll(async () => {
    await sql?.end();
    await svc?.close();
    await db?.drop();
  });

  it('keeps DATA_DIR closed to other users (0700; 0711, traverse only, as root) and its generated keys 0600', () => {
    expect(mode(DATA_DIR)).toBe(process.getuid?.() === 0 ? 0o711 : 0o700);
    for (const file of GENERATED) expect([file, mode(join(DATA_DIR, file))]).toEqual([file, 0o600]);
  });

  it('stores workspace secrets sealed: new ones, and the plain ones of earlier versions at start; never answered', async () => {
    const value = `sk-live-${randomUUID()}`;
    const res = await svc.api('/api/v1/workspaces/current/secrets', { method: 'POST', json: [{ key: 'OPENAI_API_KEY', value }] });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).not.toContain(value);
    expect(JSON.parse(text)).toEqual([{ key: 'OPENAI_API_KEY', updated_at: expect.any(String) }]);
    const listed = await (await svc.api('/api/v1/workspaces/current/secrets')).text();
    expect(listed).not.toContain(value);

    const rows = (await sql.query(`SELECT "workspace_id", "key", "value", "sealed", t::text AS "row" FROM "gateway"."workspace_secrets" t`)).rows as {
      workspace_id: string;
      key: string;
      value: string;
      sealed: boolean;
      row: string;
    }[];
    const cipher = new SecretCipher(readFileSync(join(DATA_DIR, 'workspace-secrets-key'), 'utf8').trim());
    const mine = rows.find((r) => r.workspace_id === svc.workspaceId && r.key === 'OPENAI_API_KEY');
    const legacy = rows.find((r) => r.workspace_id === legacyWorkspace && r.key === 'LEGACY');
    expect(mine?.sealed).toBe(true);
    expect(mine?.row).not.toContain(value);
    expect(cipher.openText(mine?.value ?? '')).toBe(value);
    expect(legacy?.sealed).toBe(true);
    expect(legacy?.row).not.toContain(legacySecret);
    expect(cipher.openText(legacy?.value ?? '')).toBe(legacySecret);
  });

  it('converted the unkeyed audit chain in the start that created the chain key', async () => {
    const repo = svc.app.get(AuditRepository);
    expect(await verifyChain(repo, svc.app.get(ChainHasher), legacyOrg)).toMatchObject({ ok: true, events_checked: 3 });
    expect((await verifyChain(repo, UNKEYED_CHAIN_HASHING, legacyOrg)).ok).toBe(false);
  });

  it('detects an audit event changed with its hash and the rest of the chain recomputed without the key', async () => {
    const org = svc.organizationId;
    // Three tracked operations of the caller's own organization.
    for (let i = 0; i < 3; i++) {
      const r = await svc.api('/api/v1/workspaces/current/secrets', { method: 'POST', json: [{ key: `K${i}`, value: 'v' }] });
      await r.text();
    }
    const verify = async () => (await (await svc.api('/api/v1/audit-logs/verify', { headers: { 'x-organization-id': org } })).json()) as { ok: boolean; first_break: { seq: number } | null };
    expect((await verify()).ok).toBe(true);
    const rows = (await sql.query(`SELECT seq::int AS seq, record, prev_hash, hash FROM audit.events WHERE chain_key = $1 ORDER BY seq`, [org])).rows as {
      seq: number;
      record: string;
      prev_hash: string;
      hash: string;
    }[];
    expect(rows.length).toBeGreaterThanOrEqual(3);
    // What a database writer can do: change an event, recompute every hash after it and the head, behind the trigger.
    const from = rows.length - 2;
    let prev = rows[from].prev_hash;
    await sql.query('BEGIN');
    await sql.query('SET LOCAL session_replication_role = replica');
    for (const r of rows.slice(from)) {
      const text = r.seq === rows[from].seq ? r.record.replace('"Success"', '"Failure"') : r.record;
      const hash = UNKEYED_CHAIN_HASHING.event(prev, org, r.seq, text);
      await sql.query(`UPDATE audit.events SET record = $3, status = CASE WHEN $3 LIKE '%"Failure"%' THEN 'Failure' ELSE status END, prev_hash = $4, hash = $5 WHERE chain_key = $1 AND seq = $2`, [
        org,
        r.seq,
        text,
        prev,
        hash,
      ]);
      prev = hash;
    }
    await sql.query(`UPDATE audit.chains SET head_hash = $2 WHERE chain_key = $1`, [org, prev]);
    await sql.query('COMMIT');
    const after = await verify();
    expect(after.ok).toBe(false);
    expect(after.first_break?.seq).toBe(rows[from].seq);
  });

  it('refuses credentials inside a destination endpoint_url (422), and masks them in a row stored before', async () => {
    const body = {
      destination_type: 's3',
      display_name: 'creds in url',
      config: { bucket_name: 'bucket-x', prefix: 'p', region: 'us-east-1', endpoint_url: 'https://AKIAUSER:s3cr3t-pass@s3.example.com' },
      credentials: { access_key_id: 'AKIAUSER', secret_access_key: 's3cr3t-pass' },
    };
    const refused = await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: body });
    expect(refused.status).toBe(422);
    const detail = ((await refused.json()) as { detail: { loc: string[]; msg: string }[] }).detail;
    expect(detail).toEqual([expect.objectContaining({ loc: ['body', 'config', 'endpoint_url'], msg: expect.stringContaining('credentials.access_key_id') })]);
    expect(JSON.stringify(detail)).not.toContain('s3cr3t-pass');

    const id = randomUUID();
    await svc.app.get(ExportsRepository).insertDestination({
      id,
      tenant_id: svc.workspaceId,
      destination_type: 's3',
      display_name: 'stored before',
      bucket_name: 'bucket-x',
      prefix: 'p',
      region: 'us-east-1',
      endpoint_url: 'https://AKIAUSER:s3cr3t-pass@s3.example.com:9000/base',
      credentials_enc: 'v1.x.y.z',
      credentials_keys: ['access_key_id', 'secret_access_key'],
    });
    const got = await svc.api(`/api/v1/bulk-exports/destinations/${id}`);
    const text = await got.text();
    expect(got.status).toBe(200);
    expect(text).not.toContain('s3cr3t-pass');
    expect((JSON.parse(text) as { config: { endpoint_url: string } }).config.endpoint_url).toBe('https://***@s3.example.com:9000/base');
    const list = await (await svc.api('/api/v1/bulk-exports/destinations?limit=1000')).text();
    expect(list).toContain('https://***@s3.example.com:9000/base');
    expect(list).not.toContain('s3cr3t-pass');
  });
});
