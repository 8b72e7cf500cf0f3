import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import type { AuditRecord } from '@th/contracts';
import { auditRecord, createTestDatabase } from '@th/testing';
import { openServiceDataSource } from '@th/database';
import { AuditLog1732250000060 } from '../migrations/1732250000060-audit-log';
import { AuditRekey1732250000061 } from '../migrations/1732250000061-audit-rekey';
import { rekeyUnkeyedChains, verifyChain } from '../chain/chain-verifier';
import { ChainHasher, UNKEYED_CHAIN_HASHING, canonicalJson } from '../chain/chain-hash';
import { AuditRepository } from './audit.repository';
import { AuditStore } from './audit-store.service';

const hasher = new ChainHasher('test-audit-chain-key-0123456789abcdef');

describe('audit store: append-only hash chains in PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let ds: DataSource;
  let repo: AuditRepository;
  let store: AuditStore;
  let sql: Client;

  beforeAll(async () => {
    db = await createTestDatabase('th_audit');
    ds = await openServiceDataSource({ url: db.url, schema: 'audit', entities: [], migrations: [AuditLog1732250000060, AuditRekey1732250000061] });
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

  /** Changes rows behind the trigger's back, as a superuser with database access could. */
  async function tamper(statement: string, params: unknown[] = []): Promise<void> {
    await sql.query('BEGIN');
    await sql.query(`SET LOCAL session_replication_role = replica`);
    await sql.query(statement, params);
    await sql.query('COMMIT');
  }

  async function rowsOf(org: string): Promise<{ seq: string; id: string; prev_hash: string; hash: string; record: string }[]> {
    return (await sql.query(`SELECT seq, id, prev_hash, hash, record FROM audit.events WHERE chain_key = $1 ORDER BY seq`, [org])).rows;
  }

  it('chains each organization from its genesis hash, in order, one hash per record', async () => {
    const org = randomUUID();
    const records = [auditRecord(org), auditRecord(org, { operation: 'delete_api_key' }), auditRecord(org, { status: 'Failure', error: 'boom' })];
    const r = await store.append(records);
    expect(r).toEqual({ stored: 3, duplicates: 0, conflicts: [] });
    const rows = await rowsOf(org);
    expect(rows.map((x) => Number(x.seq))).toEqual([1, 2, 3]);
    expect(rows.map((x) => x.id)).toEqual(records.map((x) => x.id));
    expect(rows[0].prev_hash).toBe(hasher.genesis(org));
    for (let i = 0; i < rows.length; i++) {
      expect(rows[i].record).toBe(canonicalJson(records[i]));
      expect(rows[i].hash).toBe(hasher.event(rows[i].prev_hash, org, i + 1, rows[i].record));
      if (i > 0) expect(rows[i].prev_hash).toBe(rows[i - 1].hash);
    }
    const report = await verifyChain(repo, hasher, org);
    expect(report).toMatchObject({ ok: true, events_checked: 3, first_break: null, head: { seq: 3, hash: rows[2].hash } });
  });

  it('stores a re-delivered record once and refuses a different record under a taken id', async () => {
    const org = randomUUID();
    const rec = auditRecord(org);
    expect((await store.append([rec])).stored).toBe(1);
    const again = await store.append([rec, { ...rec }]);
    expect(again).toEqual({ stored: 0, duplicates: 2, conflicts: [] });
    const clash = await store.append([{ ...rec, operation: 'delete_workspace' }]);
    expect(clash.stored).toBe(0);
    expect(clash.conflicts).toHaveLength(1);
    expect(clash.conflicts[0].reason).toContain(rec.id);
    expect(await rowsOf(org)).toHaveLength(1);
    expect((await verifyChain(repo, hasher, org)).ok).toBe(true);
  });

  it('keeps one gapless chain under concurrent appends to the same organization', async () => {
    const org = randomUUID();
    const all = Array.from({ length: 40 }, () => auditRecord(org));
    await Promise.all(Array.from({ length: 8 }, (_, i) => store.append(all.slice(i * 5, i * 5 + 5))));
    const rows = await rowsOf(org);
    expect(rows.map((x) => Number(x.seq))).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(new Set(rows.map((x) => x.id))).toEqual(new Set(all.map((x) => x.id)));
    expect(await verifyChain(repo, hasher, org)).toMatchObject({ ok: true, events_checked: 40 });
  });

  it('keeps events without an organization in their own chain', async () => {
    const rec = auditRecord(null, { status: 'Failure' });
    await store.append([rec]);
    const rows = (await sql.query(`SELECT chain_key FROM audit.events WHERE id = $1`, [rec.id])).rows;
    expect(rows).toEqual([{ chain_key: '' }]);
    expect((await verifyChain(repo, hasher, '')).ok).toBe(true);
  });

  it('refuses UPDATE, DELETE and TRUNCATE on the events table', async () => {
    const org = randomUUID();
    await store.append([auditRecord(org)]);
    await expect(sql.query(`UPDATE audit.events SET status = 'Failure' WHERE chain_key = $1`, [org])).rejects.toThrow(/append-only: UPDATE refused/);
    await expect(sql.query(`DELETE FROM audit.events WHERE chain_key = $1`, [org])).rejects.toThrow(/append-only: DELETE refused/);
    await expect(sql.query(`TRUNCATE audit.events`)).rejects.toThrow(/append-only: TRUNCATE refused/);
    // the retention flag is only honoured for DELETE
    await sql.query('BEGIN');
    await sql.query(`SET LOCAL audit.retention = 'on'`);
    await expect(sql.query(`UPDATE audit.events SET status = 'Failure' WHERE chain_key = $1`, [org])).rejects.toThrow(/append-only/);
    await sql.query('ROLLBACK');
    expect(await rowsOf(org)).toHaveLength(1);
    expect((await verifyChain(repo, hasher, org)).ok).toBe(true);
  });

  describe('tampering behind the trigger is reported at the first break', () => {
    async function chainOf(n: number): Promise<{ org: string; records: AuditRecord[] }> {
      const org = randomUUID();
      const records = Array.from({ length: n }, (_, i) => auditRecord(org, { time: new Date(Date.UTC(2026, 10, 1, 10, i)).toISOString() }));
      await store.append(records);
      expect((await verifyChain(repo, hasher, org)).ok).toBe(true);
      return { org, records };
    }

    it('a changed record', async () => {
      const { org, records } = await chainOf(6);
      const changed = canonicalJson({ ...records[3], operation: 'create_workspace' });
      await tamper(`UPDATE audit.events SET record = $2 WHERE chain_key = $1 AND seq = 4`, [org, changed]);
      const r = await verifyChain(repo, hasher, org);
      expect(r.ok).toBe(false);
      expect(r.first_break).toEqual({ seq: 4, event_id: records[3].id, reason: 'the content of event 4 does not match its hash' });
      expect(r.events_checked).toBe(3);
    });

    it('a changed record with its own hash recomputed', async () => {
      const { org, records } = await chainOf(5);
      const rows = await rowsOf(org);
      const changed = canonicalJson({ ...records[1], resources: [{ type: 'api_key', id: randomUUID() }] });
      await tamper(`UPDATE audit.events SET record = $2, hash = $3 WHERE chain_key = $1 AND seq = 2`, [org, changed, hasher.event(rows[1].prev_hash, org, 2, changed)]);
      const r = await verifyChain(repo, hasher, org);
      expect(r.first_break).toEqual({ seq: 3, event_id: records[2].id, reason: 'prev_hash does not match the hash of event 2' });
    });

    it('an indexed column changed without the record', async () => {
      const { org, records } = await chainOf(4);
      await tamper(`UPDATE audit.events SET operation = 'delete_workspace' WHERE chain_key = $1 AND seq = 2`, [org]);
      const r = await verifyChain(repo, hasher, org);
      expect(r.first_break).toEqual({ seq: 2, event_id: records[1].id, reason: 'the indexed columns of event 2 differ from its hashed record' });
    });

    it('an event removed from the middle', async () => {
      const { org, records } = await chainOf(6);
      await tamper(`DELETE FROM audit.events WHERE chain_key = $1 AND seq = 3`, [org]);
      const r = await verifyChain(repo, hasher, org);
      expect(r.first_break).toEqual({ seq: 4, event_id: records[3].id, reason: 'event(s) 3..3 are missing: the chain continues at 4' });
    });

    it('events removed from the end', async () => {
      const { org } = await chainOf(5);
      await tamper(`DELETE FROM audit.events WHERE chain_key = $1 AND seq >= 4`, [org]);
      const r = await verifyChain(repo, hasher, org);
      expect(r.first_break).toEqual({ seq: 4, event_id: null, reason: 'event(s) 4..5 are missing: the chain head is 5' });
    });

    it('an event inserted past the head', async () => {
      const { org } = await chainOf(3);
      const rows = await rowsOf(org);
      const fake = auditRecord(org);
      const text = canonicalJson(fake);
      await tamper(
        `INSERT INTO audit.events (chain_key, seq, id, time, operation, status, organization_id, workspace_id, record, prev_hash, hash)
         VALUES ($1, 4, $2, $3, $4, $5, $1, $6, $7, $8, $9)`,
        [org, fake.id, fake.time, fake.operation, fake.status, fake.workspace_id, text, rows[2].hash, hasher.event(rows[2].hash, org, 4, text)],
      );
      const r = await verifyChain(repo, hasher, org);
      expect(r.first_break).toEqual({ seq: 4, event_id: fake.id, reason: 'event 4 lies beyond the chain head 3' });
    });

    it('the whole chain wiped with its head reset', async () => {
      const { org } = await chainOf(3);
      await tamper(`DELETE FROM audit.events WHERE chain_key = $1`, [org]);
      await tamper(`UPDATE audit.chains SET head_seq = 0, head_hash = 'x', anchor_hash = 'x' WHERE chain_key = $1`, [org]);
      const r = await verifyChain(repo, hasher, org);
      expect(r.first_break).toEqual({ seq: 0, event_id: null, reason: 'the chain anchor is not the genesis hash of this organization' });
    });

    it('a changed record with the chain after it recomputed unkeyed (no key: what a database writer can do)', async () => {
      const { org, records } = await chainOf(5);
      const rows = await rowsOf(org);
      let prev = rows[1].hash;
      for (let seq = 3; seq <= 5; seq++) {
        const text = seq === 3 ? canonicalJson({ ...records[2], status: 'Failure' }) : rows[seq - 1].record;
        const hash = UNKEYED_CHAIN_HASHING.event(prev, org, seq, text);
        await tamper(`UPDATE audit.events SET record = $3, prev_hash = $4, hash = $5 WHERE chain_key = $1 AND seq = $2`, [org, seq, text, prev, hash]);
        prev = hash;
      }
      await tamper(`UPDATE audit.chains SET head_hash = $2 WHERE chain_key = $1`, [org, prev]);
      const r = await verifyChain(repo, hasher, org);
      expect(r.first_break).toEqual({ seq: 3, event_id: records[2].id, reason: 'the content of event 3 does not match its hash' });
    });

    it('the whole chain rebuilt unkeyed from its genesis', async () => {
      const { org, records } = await chainOf(3);
      let prev = UNKEYED_CHAIN_HASHING.genesis(org);
      await tamper(`UPDATE audit.chains SET anchor_hash = $2 WHERE chain_key = $1`, [org, prev]);
      for (let seq = 1; seq <= 3; seq++) {
        const text = canonicalJson({ ...records[seq - 1], workspace_id: null });
        const hash = UNKEYED_CHAIN_HASHING.event(prev, org, seq, text);
        await tamper(`UPDATE audit.events SET record = $3, workspace_id = NULL, prev_hash = $4, hash = $5 WHERE chain_key = $1 AND seq = $2`, [org, seq, text, prev, hash]);
        prev = hash;
      }
      await tamper(`UPDATE audit.chains SET head_hash = $2 WHERE chain_key = $1`, [org, prev]);
      expect((await verifyChain(repo, UNKEYED_CHAIN_HASHING, org)).ok).toBe(true);
      const r = await verifyChain(repo, hasher, org);
      expect(r.first_break).toEqual({ seq: 0, event_id: null, reason: 'the chain anchor is not the genesis hash of this organization' });
    });

    it('a chain verified under another key', async () => {
      const { org } = await chainOf(2);
      const r = await verifyChain(repo, new ChainHasher('another-audit-chain-key-0123456789abc'), org);
      expect(r.ok).toBe(false);
    });

    it('other organizations still verify', async () => {
      const { org } = await chainOf(2);
      const other = await chainOf(2);
      await tamper(`UPDATE audit.events SET status = 'Failure' WHERE chain_key = $1 AND seq = 1`, [org]);
      expect((await verifyChain(repo, hasher, org)).ok).toBe(false);
      expect((await verifyChain(repo, hasher, other.org)).ok).toBe(true);
    });
  });

  it('converts chains stored before chain keys once: unkeyed ones that verify are rekeyed, broken ones left', async () => {
    const unkeyedStore = new AuditStore(repo, UNKEYED_CHAIN_HASHING);
    const legacy = randomUUID();
    await unkeyedStore.append([auditRecord(legacy), auditRecord(legacy), auditRecord(legacy)]);
    const broken = randomUUID();
    await unkeyedStore.append([auditRecord(broken), auditRecord(broken)]);
    await tamper(`UPDATE audit.events SET status = 'Failure' WHERE chain_key = $1 AND seq = 1`, [broken]);
    const keyed = randomUUID();
    await store.append([auditRecord(keyed)]);
    expect((await verifyChain(repo, hasher, legacy)).ok).toBe(false);

    const reports = await rekeyUnkeyedChains(repo, hasher);
    const outcome = (org: string) => reports.find((r) => r.chain_key === org);
    expect(outcome(legacy)).toEqual({ chain_key: legacy, outcome: 'rekeyed', events: 3 });
    expect(outcome(broken)).toEqual({ chain_key: broken, outcome: 'broken', events: 0 });
    expect(outcome(keyed)).toEqual({ chain_key: keyed, outcome: 'keyed', events: 1 });
    expect(await verifyChain(repo, hasher, legacy)).toMatchObject({ ok: true, events_checked: 3 });
    expect((await verifyChain(repo, hasher, broken)).ok).toBe(false);
    // New events continue the converted chain; the trigger refuses UPDATE again outside the job.
    await store.append([auditRecord(legacy)]);
    expect(await verifyChain(repo, hasher, legacy)).toMatchObject({ ok: true, events_checked: 4 });
    await expect(sql.query(`UPDATE audit.events SET hash = 'x' WHERE chain_key = $1`, [legacy])).rejects.toThrow(/append-only: UPDATE refused/);
  });
});
