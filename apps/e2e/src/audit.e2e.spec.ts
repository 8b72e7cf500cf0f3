import { randomUUID } from 'node:crypto';
import type { AuditChainVerification, AuditLogsResponse } from '@th/contracts';
import { api, eventually, type Json, type SuiteCluster, useSharedCluster } from './cluster-client';

/**
 * Audit in the cluster form: query publishes tracked operations (its own Success and Failure, and the
 * interceptor's Failure of a 422 body) to Kafka `audit`; the audit app, its own process, consumes
 * and chains them; the gateway routes /audit-logs to it.
 */
describe('audit logs in the cluster form', () => {
  let cluster: SuiteCluster;
  let call: ReturnType<typeof api>;
  useSharedCluster((c, a) => ((cluster = c), (call = a)));

  it('a session update through the gateway, its failed attempts included, shows in /audit-logs served by the audit process', async () => {
    expect(cluster.audit).toBeDefined();
    const created = await call('/api/v1/sessions', { method: 'POST', json: { name: `audit-cluster-${randomUUID()}` } });
    expect(created.status).toBe(200);
    const sessionId = ((await created.json()) as Json).id as string;

    expect((await call(`/api/v1/sessions/${sessionId}`, { method: 'PATCH', json: { description: 'audited' } })).status).toBe(200);
    const invalid = await call(`/api/v1/sessions/${sessionId}`, { method: 'PATCH', json: { name: 42 } });
    expect(invalid.status).toBe(422);
    expect(((await invalid.json()) as { detail: { loc: unknown[] }[] }).detail[0].loc).toEqual(['body', 'name']);
    const missing = randomUUID();
    expect((await call(`/api/v1/sessions/${missing}`, { method: 'DELETE' })).status).toBe(404);

    const mine = async () => {
      const res = await call('/api/v1/audit-logs?operations=update_tracer_session&operations=delete_tracer_session&limit=100');
      expect(res.status).toBe(200);
      const body = (await res.json()) as AuditLogsResponse;
      return body.items.filter((e) => e.resources.some((r) => r.uid === sessionId || r.uid === missing));
    };
    const events = await eventually(mine, (l) => l.length >= 3, 60_000, 250);
    expect(events.map((e) => [e.api.operation, e.status, e.resources[0].uid])).toEqual([
      ['update_tracer_session', 'Success', sessionId],
      ['update_tracer_session', 'Failure', sessionId],
      ['delete_tracer_session', 'Failure', missing],
    ]);
    for (const e of events) expect(e.api.service).toEqual({ name: 'query' });
    expect(events[1].status_detail).toContain('body.name');
    expect(new Set(events.map((e) => e.metadata.uid)).size).toBe(3);

    const verify = await call('/api/v1/audit-logs/verify');
    expect(verify.status).toBe(200);
    const v = (await verify.json()) as AuditChainVerification;
    expect(v).toMatchObject({ ok: true, first_break: null });
    expect(v.events_checked).toBeGreaterThanOrEqual(3);
  });

  it('refuses bad audit-log queries with 422 through the gateway', async () => {
    const res = await call('/api/v1/audit-logs?limit=-1');
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: { loc: unknown[]; msg: string; type: string }[] };
    for (const d of body.detail) expect(d).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
  });
});
