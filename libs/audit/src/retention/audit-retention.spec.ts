import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { openServiceDataSource } from '@th/database';
import { auditRecord, createTestDatabase } from '@th/testing';
import { AuditLog1732250000060 } from '../migrations/1732250000060-audit-log';
import { ChainHasher } from '../chain/chain-hash';
import { verifyChain } from '../chain/chain-verifier';
import { AuditRepository } from '../store/audit.repository';
import { AuditStore } from '../store/audit-store.service';
import type { AuditOptions } from '../audit.options';
import { AuditRetentionService } from './audit-retention.service';

const DAY = 24 * 60 * 60 * 1000;
const NOW = new Date('2027-06-01T00:00:00.000Z');
const daysAgo = (d: number) => new Date(NOW.getTime() - d * DAY).toISOString();

describe('audit retention: removes expired events and keeps the chain verifiable', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let ds: DataSource;
  let repo: AuditRepository;
  let store: AuditStore;
  let sql: Client;
  const options: AuditOptions = { productVersion: 'test', defaultOrgFeatureCanUseAuditLogs: false, retentionDays: 400, retentionIntervalMinutes: 0, chainKey: 'test-audit-chain-key-0123456789abcdef' };
  const hasher = new ChainHasher(options.chainKey);

  beforeAll(async () => {
    db = await createTestDatabase('th_audit');
    ds = await openServiceDataSource({ url: db.url, schema: 'audit', entities: [], migrations: [AuditLog1732250000060] });
    repo = new AuditRepository(ds);
    store = new AuditStore(repo, hasher);
    sql = new Client({ connectionString: db.url });
    await sql.connect();
  });

  afterAll(async () => {
    await sql.end();
    await ds.destroy();
    await db.drop();
  });

  const seqsOf = async (org: string) =>
    (await sql.query(`SELECT seq FROM audit.events WHERE chain_key = $1 ORDER BY seq`, [org])).rows.map((r: { seq: string }) => Number(r.seq));

  it('never keeps more than 400 days, whatever is configured', () => {
    const svc = new AuditRetentionService(repo, hasher, { ...options, retentionDays: 9999 });
    expect(svc.cutoff(NOW).toISOString()).toBe(daysAgo(400));
    expect(new AuditRetentionService(repo, hasher, { ...options, retentionDays: 30 }).cutoff(NOW).toISOString()).toBe(daysAgo(30));
  });

  it('removes the expired prefix, anchors the chain on the last removed hash, and appends continue the chain', async () => {
    const org = randomUUID();
    const records = [500, 450, 401, 399, 10, 1].map((d) => auditRecord(org, { time: daysAgo(d) }));
    await store.append(records);
    const hash3 = (await sql.query(`SELECT hash FROM audit.events WHERE chain_key = $1 AND seq = 3`, [org])).rows[0].hash as string;
    const svc = new AuditRetentionService(repo, hasher, options);
    const r = await svc.removeExpired(NOW);
    expect(r.refused).toEqual([]);
    expect(r.removed).toBeGreaterThanOrEqual(3);
    expect(await seqsOf(org)).toEqual([4, 5, 6]);
    const head = await repo.head(org);
    expect(head).toMatchObject({ anchor_seq: 3, anchor_hash: hash3, head_seq: 6 });
    expect(await verifyChain(repo, hasher, org)).toMatchObject({ ok: true, events_checked: 3, anchor: { seq: 3, hash: hash3 } });
    // a second run has nothing left to remove for this chain
    const again = await svc.removeExpired(NOW);
    expect(again.refused).toEqual([]);
    expect(await seqsOf(org)).toEqual([4, 5, 6]);
    await store.append([auditRecord(org)]);
    expect(await seqsOf(org)).toEqual([4, 5, 6, 7]);
    expect(await verifyChain(repo, hasher, org)).toMatchObject({ ok: true, events_checked: 4 });
  });

  it('removes a whole chain that has expired and keeps its head as the anchor', async () => {
    const org = randomUUID();
    await store.append([auditRecord(org, { time: daysAgo(600) }), auditRecord(org, { time: daysAgo(500) })]);
    const before = await repo.head(org);
    await new AuditRetentionService(repo, hasher, options).removeExpired(NOW);
    expect(await seqsOf(org)).toEqual([]);
    expect(await repo.head(org)).toMatchObject({ anchor_seq: 2, anchor_hash: before?.head_hash, head_seq: 2 });
    expect(await verifyChain(repo, hasher, org)).toMatchObject({ ok: true, events_checked: 0 });
  });

  it('stops at the first kept event: an old event behind a younger one waits, so only a prefix is ever removed', async () => {
    const org = randomUUID();
    await store.append([daysAgo(700), daysAgo(100), daysAgo(600), daysAgo(5)].map((t) => auditRecord(org, { time: t })));
    await new AuditRetentionService(repo, hasher, options).removeExpired(NOW);
    expect(await seqsOf(org)).toEqual([2, 3, 4]);
    expect((await verifyChain(repo, hasher, org)).ok).toBe(true);
  });

  it('refuses to remove a prefix that does not verify, keeping the evidence', async () => {
    const org = randomUUID();
    await store.append([daysAgo(500), daysAgo(450), daysAgo(3)].map((t) => auditRecord(org, { time: t })));
    await sql.query('BEGIN');
    await sql.query('SET LOCAL session_replication_role = replica');
    await sql.query(`UPDATE audit.events SET record = replace(record, 'create_api_key', 'delete_api_key') WHERE chain_key = $1 AND seq = 2`, [org]);
    await sql.query('COMMIT');
    const r = await new AuditRetentionService(repo, hasher, options).removeExpired(NOW);
    expect(r.refused).toEqual([{ chain_key: org, reason: 'the content of event 2 does not match its hash' }]);
    expect(await seqsOf(org)).toEqual([1, 2, 3]);
    expect(await repo.head(org)).toMatchObject({ anchor_seq: 0 });
  });
});
