import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { InProcessBus } from '@th/bus';
import { startConsumers } from '@th/testing';
import { ClickHouse, migrateClickHouse, RUNS_BY_ID } from '@th/clickhouse';
import { TOPICS, feedbackCreateSchema, type FeedbackEvent, type Identity } from '@th/contracts';
import { FeedbackQueryService } from './feedback-query.service';
import { FeedbackRepository } from './feedback.repository';
import { FeedbackService } from './feedback.service';
import { FeedbackWriterService } from './feedback-writer.service';
import { FeedbackWriterConsumer } from './feedback-writer.consumer';

/** The feedback write path on the real engine (chDB) and the in-process bus: publish, write, read. */
describe('feedback store on ClickHouse (chDB)', () => {
  // One chDB data directory per process, the same one the standalone harness uses in this worker.
  const dir = join(tmpdir(), `th-standalone-${process.pid}`);
  let ch: ClickHouse;
  let bus: InProcessBus;
  let service: FeedbackService;
  let reads: FeedbackQueryService;
  let writer: FeedbackWriterService;
  let consumers: INestApplication;
  const tenant = randomUUID();
  const identity = { tenant_id: tenant, organization_id: randomUUID() } as Identity;

  beforeAll(async () => {
    ch = ClickHouse.connect({ kind: 'embedded', path: dir });
    await migrateClickHouse(ch);
    bus = new InProcessBus();
    const repo = new FeedbackRepository(ch);
    writer = new FeedbackWriterService(repo);
    consumers = await startConsumers(bus, [FeedbackWriterConsumer], [{ provide: FeedbackWriterService, useValue: writer }]);
    service = new FeedbackService(bus, repo);
    reads = new FeedbackQueryService(repo);
  });
  afterAll(async () => {
    await consumers?.close();
    await bus?.close();
    await ch?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const create = (body: unknown) => service.create(identity, feedbackCreateSchema.parse(body));

  it('a 2xx-worthy create is readable at once (the in-process publish resolves after the insert)', async () => {
    const run = randomUUID();
    const f = await create({ run_id: run, key: 'k', score: 0.5, comment: 'c' });
    expect(await reads.get(identity, f.id)).toEqual(f);
    expect(await reads.list(identity, { run: [run], offset: 0, limit: 10 })).toEqual([f]);
  });

  it('keeps the newest version per id whatever the arrival order, duplicates included', async () => {
    const run = randomUUID();
    const f = await create({ run_id: run, key: 'order', score: 0.1 });
    const base = (await ch.query<{ version: number }>('SELECT version FROM feedback FINAL WHERE tenant_id = {t:UUID} AND id = {id:UUID}', { t: tenant, id: f.id }))[0];
    const stored = { tenant_id: tenant, id: f.id, run_id: run, trace_id: null, session_id: null, key: 'order', value_json: null, comment: null, correction_json: null, feedback_source: { type: 'api' }, feedback_config: null, comparative_experiment_id: null, feedback_group_id: null, created_at: f.created_at, modified_at: f.modified_at, is_deleted: false };
    const newer: FeedbackEvent = { ...stored, score: 0.9, version: Number(base.version) + 100 };
    const older: FeedbackEvent = { ...stored, score: 0.4, version: Number(base.version) + 50 };
    await bus.publish(TOPICS.feedback, [{ key: run, value: newer }, { key: run, value: newer }]);
    await bus.publish(TOPICS.feedback, [{ key: run, value: older }]);
    expect((await reads.get(identity, f.id)).score).toBe(0.9);
    const counted = await ch.query<{ n: number }>('SELECT count() AS n FROM feedback FINAL WHERE tenant_id = {t:UUID} AND run_id = {r:UUID}', { t: tenant, r: run });
    expect(Number(counted[0].n)).toBe(1);
  });

  it('update bumps the version past what is stored; delete hides it from every read', async () => {
    const run = randomUUID();
    const f = await create({ run_id: run, key: 'upd', score: 1, feedback_config: { type: 'continuous', min: 0, max: 2 } });
    const u = await service.update(identity, f.id, { score: 2, value: 'top' });
    expect(u).toMatchObject({ score: 2, value: 'top', created_at: f.created_at });
    await expect(service.update(identity, f.id, { score: 3 })).rejects.toMatchObject({ code: 'validation' });
    await service.delete(identity, f.id);
    await expect(reads.get(identity, f.id)).rejects.toMatchObject({ code: 'not_found' });
    expect(await reads.list(identity, { run: [run], offset: 0, limit: 10 })).toEqual([]);
    await expect(service.delete(identity, f.id)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('submit (the path for experiment upload) fills trace and project from a stored run', async () => {
    const run = randomUUID();
    const trace = randomUUID();
    const session = randomUUID();
    await ch.insertJsonEachRow(
      RUNS_BY_ID,
      Buffer.from(JSON.stringify({ tenant_id: tenant, id: run, session_id: session, start_time: '2026-11-22 04:04:29.623001', trace_id: trace, dotted_order: 'x', version: 1, is_deleted: 0 })),
    );
    const [e] = await service.submit(identity, [feedbackCreateSchema.parse({ run_id: run, key: 'exp', score: 1 })]);
    expect(e).toMatchObject({ run_id: run, trace_id: trace, session_id: session });
    expect((await reads.list(identity, { session: [session], offset: 0, limit: 10 })).map((f) => f.id)).toEqual([e.id]);
    expect((await reads.list(identity, { trace: [trace], key: ['exp'], offset: 0, limit: 10 })).map((f) => f.id)).toEqual([e.id]);
  });

  it('the writer dead-letters an invalid event and stores the valid ones of the same batch', async () => {
    const run = randomUUID();
    const good = await service.submit(identity, [feedbackCreateSchema.parse({ run_id: run, key: 'ok', score: 1 })]);
    const res = await writer.handle([
      { topic: 'feedback', key: run, value: { ...good[0], id: randomUUID(), key: 'also-ok' }, partition: null, offset: null, headers: {} },
      { topic: 'feedback', key: run, value: { nonsense: true } as unknown as FeedbackEvent, partition: null, offset: null, headers: {} },
    ]);
    expect(res.rejected).toHaveLength(1);
    expect(res.rejected[0].reason).toMatch(/invalid feedback event/);
    expect((await reads.list(identity, { run: [run], offset: 0, limit: 10 })).map((f) => f.key).sort()).toEqual(['also-ok', 'ok']);
  });

  it('another tenant sees nothing', async () => {
    const run = randomUUID();
    const f = await create({ run_id: run, key: 'mine', score: 1 });
    const other = { tenant_id: randomUUID(), organization_id: randomUUID() } as Identity;
    await expect(reads.get(other, f.id)).rejects.toMatchObject({ code: 'not_found' });
    expect(await reads.list(other, { run: [run], offset: 0, limit: 10 })).toEqual([]);
  });
});
