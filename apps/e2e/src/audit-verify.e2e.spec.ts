import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { DataSource } from 'typeorm';
import { AUDIT_ENTITIES, AUDIT_MIGRATIONS, AuditRepository, AuditStore, UNKEYED_CHAIN_HASHING } from '@th/audit';
import { openServiceDataSource } from '@th/database';
import { auditRecord, createTestDatabase } from '@th/testing';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');

/** An event of an earlier version's chain. */
const record = (org: string) => auditRecord(org, { user_id: null, resources: [] });

/**
 * The audit verify command (compiled, as operators run it) on chains stored before chain keys: they
 * do not verify under AUDIT_CHAIN_KEY until --rekey-unkeyed converts them once; an unkeyed rewrite
 * afterwards is a break. Needs `npm run build`.
 */
describe('audit verify command with AUDIT_CHAIN_KEY', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let ds: DataSource;
  const org = randomUUID();
  const chainKey = randomBytes(32).toString('hex');
  const env = () => ({ ...process.env, DATABASE_URL: db.url, AUDIT_CHAIN_KEY: chainKey });

  const verify = async (...args: string[]): Promise<{ code: number; lines: Record<string, unknown>[] }> => {
    try {
      const { stdout } = await run('node', ['scripts/run.js', 'apps/audit/src/verify.js', ...args], { cwd: ROOT, env: env(), timeout: 60_000 });
      return { code: 0, lines: stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) };
    } catch (err) {
      const e = err as { code: number; stdout: string };
      return { code: e.code, lines: e.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
    }
  };

  beforeAll(async () => {
    db = await createTestDatabase('th_audit_verify');
    ds = await openServiceDataSource({ url: db.url, schema: 'audit', entities: AUDIT_ENTITIES, migrations: AUDIT_MIGRATIONS });
    await new AuditStore(new AuditRepository(ds), UNKEYED_CHAIN_HASHING).append([record(org), record(org), record(org)]);
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('reports an unkeyed chain broken, converts it once on request, then catches an unkeyed rewrite', async () => {
    const before = await verify(org);
    expect(before.code).toBe(1);
    expect(before.lines).toEqual([expect.objectContaining({ organization_id: org, ok: false })]);

    const rekeyed = await verify('--rekey-unkeyed');
    expect(rekeyed.code).toBe(0);
    expect(rekeyed.lines).toEqual([{ rekey: 'rekeyed', organization_id: org, events: 3 }, expect.objectContaining({ organization_id: org, ok: true, events_checked: 3 })]);

    // A database writer changes event 2 and recomputes it and the rest without the key.
    const rows = (await ds.query(`SELECT seq::int AS seq, record, prev_hash FROM audit.events WHERE chain_key = $1 ORDER BY seq`, [org])) as { seq: number; record: string; prev_hash: string }[];
    await ds.transaction(async (m) => {
      await m.query('SET LOCAL session_replication_role = replica');
      let prev = rows[1].prev_hash;
      for (const r of rows.slice(1)) {
        const text = r.seq === 2 ? r.record.replace('"Success"', '"Failure"') : r.record;
        const hash = UNKEYED_CHAIN_HASHING.event(prev, org, r.seq, text);
        await m.query(`UPDATE audit.events SET record = $3, status = $4, prev_hash = $5, hash = $6 WHERE chain_key = $1 AND seq = $2`, [org, r.seq, text, r.seq === 2 ? 'Failure' : 'Success', prev, hash]);
        prev = hash;
      }
      await m.query(`UPDATE audit.chains SET head_hash = $2 WHERE chain_key = $1`, [org, prev]);
    });
    const after = await verify();
    expect(after.code).toBe(1);
    expect(after.lines).toEqual([expect.objectContaining({ organization_id: org, ok: false, first_break: expect.objectContaining({ seq: 2 }) })]);
  }, 180_000);
});
