import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { INestApplication } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { TOPICS, type AuditRecord, type Identity } from '@th/contracts';
import { InProcessBus } from '@th/bus';
import { AuditPublisher, inTrackedOperation } from '@th/audit-client';
import { openServiceDataSource } from '@th/database';
import { auditRecord, createTestDatabase, startConsumers } from '@th/testing';
import { AuditLog1732250000060 } from '../migrations/1732250000060-audit-log';
import { ChainHasher } from '../chain/chain-hash';
import { verifyChain } from '../chain/chain-verifier';
import { AuditConsumer } from './audit.consumer';
import { AuditRepository } from './audit.repository';
import { AuditStore } from './audit-store.service';

const hasher = new ChainHasher('test-audit-chain-key-0123456789abcdef');

describe('audit consumer: the audit topic into the store, through the real in-process bus', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let ds: DataSource;
  let repo: AuditRepository;
  let bus: InProcessBus;
  let publisher: AuditPublisher;
  let sql: Client;
  let consumers: INestApplication;

  beforeAll(async () => {
    db = await createTestDatabase('th_audit');
    ds = await openServiceDataSource({ url: db.url, schema: 'audit', entities: [], migrations: [AuditLog1732250000060] });
    repo = new AuditRepository(ds);
    bus = new InProcessBus();
    publisher = new AuditPublisher(bus, 'gateway');
    consumers = await startConsumers(bus, [AuditConsumer], [{ provide: AuditStore, useValue: new AuditStore(repo, hasher) }]);
    sql = new Client({ connectionString: db.url });
    await sql.connect();
  });

  afterAll(async () => {
    await consumers.close();
    await bus.close();
    await sql.end();
    await ds.destroy();
    await db.drop();
  });

  const identity = (org: string): Identity => ({
    organization_id: org,
    tenant_id: randomUUID(),
    user_id: randomUUID(),
    credential_id: randomUUID(),
    credential_type: 'api_key',
    plan: 'enterprise',
    permissions: ['organization:manage'],
  });
  const stored = async (org: string) =>
    (await sql.query(`SELECT id, operation, status, record FROM audit.events WHERE chain_key = $1 ORDER BY seq`, [org])).rows as {
      id: string;
      operation: string;
      status: string;
      record: string;
    }[];

  it('stores what AuditPublisher.record and .track publish, Success and Failure, before the publish resolves', async () => {
    const org = randomUUID();
    const who = identity(org);
    const keyId = randomUUID();
    await publisher.record({ operation: 'create_api_key', identity: who, resources: [{ type: 'api_key', id: keyId }] });
    // .track records the operation being performed: here named by the caller, as outside any tracked route.
    const created = await inTrackedOperation('create_workspace', () => publisher.track({ identity: who }, async () => ({ id: randomUUID() }), (r) => [{ type: 'workspace', id: r.id }]));
    await expect(inTrackedOperation('delete_workspace', () => publisher.track({ identity: who }, async () => Promise.reject(new Error('workspace is busy'))))).rejects.toThrow('workspace is busy');
    const rows = await stored(org);
    expect(rows.map((r) => [r.operation, r.status])).toEqual([
      ['create_api_key', 'Success'],
      ['create_workspace', 'Success'],
      ['delete_workspace', 'Failure'],
    ]);
    const native = rows.map((r) => JSON.parse(r.record) as AuditRecord);
    expect(native[0]).toMatchObject({ organization_id: org, workspace_id: who.tenant_id, user_id: who.user_id, credential_id: who.credential_id, resources: [{ type: 'api_key', id: keyId }] });
    expect(native[1].resources).toEqual([{ type: 'workspace', id: created.id }]);
    expect(native[2].error).toBe('workspace is busy');
    expect((await verifyChain(repo, hasher, org)).ok).toBe(true);
  });

  it('stores a re-delivered message once', async () => {
    const org = randomUUID();
    const rec = auditRecord(org);
    await bus.publish(TOPICS.audit, [{ key: org, value: rec }]);
    await bus.publish(TOPICS.audit, [{ key: org, value: rec }, { key: org, value: rec }]);
    expect((await stored(org)).map((r) => r.id)).toEqual([rec.id]);
    expect(await verifyChain(repo, hasher, org)).toMatchObject({ ok: true, events_checked: 1 });
  });

  it('dead-letters invalid records and id clashes, and stores the valid rest of the batch', async () => {
    const org = randomUUID();
    const good = auditRecord(org);
    const taken = auditRecord(org);
    await bus.publish(TOPICS.audit, [{ key: org, value: taken }]);
    const before = bus.recentDeadLetters().length;
    await bus.publish(TOPICS.audit, [
      { key: org, value: { ...auditRecord(org), operation: 'drop_everything' } as unknown as AuditRecord },
      { key: org, value: { ...auditRecord(org), time: 'yesterday' } },
      { key: org, value: { ...taken, status: 'Failure' } },
      { key: org, value: good },
    ]);
    expect(bus.recentDeadLetters().length - before).toBe(3);
    expect((await stored(org)).map((r) => r.id)).toEqual([taken.id, good.id]);
    expect((await verifyChain(repo, hasher, org)).ok).toBe(true);
  });
});
