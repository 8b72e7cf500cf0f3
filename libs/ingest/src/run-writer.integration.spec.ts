import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InProcessBus, type BusMessage } from '@th/bus';
import { ClickHouse, migrateClickHouse } from '@th/clickhouse';
import { TOPICS, type RunEvent, type TopicPayload } from '@th/contracts';
import { PriceMapRepository } from './price-map/price-map.repository';
import { RunWriterService } from './run-writer.service';

/** The run writer on the real engine (chDB): what it acknowledges is in ClickHouse, retries included. */
describe('run writer on ClickHouse (chDB)', () => {
  const dir = join(tmpdir(), `th-writer-${process.pid}`);
  let ch: ClickHouse;
  let bus: InProcessBus;
  let writer: RunWriterService;
  const tenant = randomUUID();
  const session = randomUUID();

  beforeAll(async () => {
    ch = ClickHouse.connect({ kind: 'embedded', path: dir });
    await migrateClickHouse(ch);
    bus = new InProcessBus();
    const options = { writer: false, writerMaxBatch: 1000, writerCacheEntries: 10_000, writerParallelBacklog: 2000, maxBodyBytes: 1 << 20, batchSizeLimit: 100 };
    writer = new RunWriterService(bus, ch, options, new PriceMapRepository(ch));
  });
  afterAll(async () => {
    await bus?.close();
    await ch?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const message = (value: RunEvent, offset: number): BusMessage<TopicPayload<'runs'>> => ({
    topic: TOPICS.runs,
    key: value.id,
    value,
    partition: 0,
    offset: String(offset),
    headers: {},
  });

  const post = (id: string): RunEvent => {
    const start = new Date('2026-11-20T10:00:00.000Z');
    const stamp = start.toISOString().replace(/[-:]/g, '').replace('.', '').replace('Z', '000Z');
    return {
      kind: 'run',
      op: 'post',
      tenant_id: tenant,
      id,
      received_at: new Date().toISOString(),
      fields: { session_id: session, trace_id: id, dotted_order: `${stamp}${id}`, name: 'root', run_type: 'chain', start_time: start.toISOString(), inputs: { q: 1 } },
    };
  };

  const stored = (id: string) =>
    ch.query<{ id: string; status: string }>('SELECT id, status FROM runs FINAL WHERE tenant_id = {t:UUID} AND id = {id:UUID}', { t: tenant, id });

  it('a batch whose insert failed is written in full when it is delivered again (nothing acknowledged is skipped as unchanged)', async () => {
    const id = randomUUID();
    const patch: RunEvent = { ...post(id), op: 'patch', fields: { end_time: '2026-11-20T10:00:01.000Z', outputs: { a: 2 } } };
    const batch = [message(post(id), 1), message(patch, 2)];
    // the runs table is away: the locator insert succeeds, the runs insert fails, the batch is not acknowledged
    await ch.command('RENAME TABLE runs TO runs_away');
    try {
      await expect(writer.handle(batch)).rejects.toThrow();
    } finally {
      await ch.command('RENAME TABLE runs_away TO runs');
    }
    expect(await stored(id)).toEqual([]);
    // the bus delivers the same batch again
    await writer.handle(batch);
    expect(await stored(id)).toEqual([{ id, status: 'success' }]);
  });
});
