import { randomUUID } from 'node:crypto';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

describe('runs through the standalone service', () => {
  let svc: TestStandalone;
  beforeAll(async () => {
    svc = await startTestStandalone();
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('creates a run with POST and reads it back', async () => {
    const id = randomUUID();
    const res = await svc.api('/api/v1/runs', {
      method: 'POST',
      json: { id, name: 'root', run_type: 'chain', start_time: '2026-11-22T04:04:29.623001Z', inputs: { q: 'hi' }, session_name: 'p1' },
    });
    expect(res.status).toBe(202);
    const got = await svc.api(`/api/v1/runs/${id}`);
    expect(got.status).toBe(200);
    const run = (await got.json()) as Record<string, unknown>;
    expect(run).toMatchObject({ id, name: 'root', run_type: 'chain', inputs: { q: 'hi' }, status: 'pending', is_root: true, trace_id: id });
    expect(run.start_time).toBe('2026-11-22T04:04:29.623001Z');
  });
});
