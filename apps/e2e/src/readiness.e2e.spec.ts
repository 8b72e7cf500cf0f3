import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, sharedKafka, startAppProcess, startClickHouseServerProcess, type AppProcess, type ClickHouseServerProcess } from '@th/testing';
import { eventually } from './cluster-client';

// Needs `npm run build`: the query app runs as its own process against a ClickHouse server this test stops.
jest.setTimeout(240_000);

describe('readiness follows the dependencies, liveness does not', () => {
  const work = mkdtempSync(join(tmpdir(), 'th-ready-'));
  let clickhouse: ClickHouseServerProcess;
  let query: AppProcess;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;

  beforeAll(async () => {
    const kafka = await sharedKafka();
    clickhouse = await startClickHouseServerProcess(join(work, 'clickhouse'));
    db = await createTestDatabase('th_ready');
    query = await startAppProcess('query', {
      INTERNAL_SIGNING_KEY: randomBytes(24).toString('hex'),
      KAFKA_BROKERS: kafka.brokers,
      KAFKA_PREFIX: `t${randomBytes(4).toString('hex')}.`,
      CLICKHOUSE_URL: clickhouse.url,
      DATABASE_URL: db.url,
      PROMPT_WEBHOOK_SECRETS_KEY: randomBytes(24).toString('hex'),
    });
  });

  afterAll(async () => {
    await query?.stop();
    await clickhouse?.stop();
    await db?.drop();
    rmSync(work, { recursive: true, force: true });
  });

  it('names each dependency; ClickHouse stopped: not ready (503, the failing check named), still live', async () => {
    const ready = await fetch(`${query.url}/health/ready`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { checks: Record<string, string> }).checks).toEqual({ bus: 'ok', clickhouse: 'ok', postgres: 'ok' });

    await clickhouse.stop();
    const down = await eventually(
      async () => {
        const r = await fetch(`${query.url}/health/ready`);
        return { status: r.status, body: (await r.json()) as { status: string; checks: Record<string, string> } };
      },
      (r) => r.status === 503,
      30_000,
      250,
    );
    expect(down.body.status).toBe('error');
    expect(down.body.checks.clickhouse).toMatch(/^error: /);
    expect(down.body.checks.postgres).toBe('ok');
    expect(down.body.checks.bus).toBe('ok');
    const live = await fetch(`${query.url}/health/live`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok' });
  });
});
