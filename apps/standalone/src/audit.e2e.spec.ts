import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { TOPICS, type ApiActivityEvent, type AuditChainVerification, type AuditLogsResponse, type AuditRecord } from '@th/contracts';
import { AuditRepository, AuditRetentionService, ChainHasher, verifyChains } from '@th/audit';
import { EventBus } from '@th/bus';
import { AuditPublisher } from '@th/audit-client';
import { IdentityService, routeFor } from '@th/gateway';
import { createTestDatabase } from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;
const DAY = 24 * 60 * 60 * 1000;

describe('audit logs through the standalone service', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let svc: TestStandalone;
  let sql: Client;

  beforeAll(async () => {
    db = await createTestDatabase('th_audit_e2e');
    svc = await startTestStandalone({ DATABASE_URL: db.url, DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: 'true' });
    sql = new Client({ connectionString: db.url });
    await sql.connect();
  });

  afterAll(async () => {
    await sql.end();
    await svc?.close();
    await db.drop();
  });

  const logs = (query: string, headers: Record<string, string> = {}) =>
    svc.api(`/api/v1/audit-logs${query}`, { headers: { 'x-organization-id': svc.organizationId, ...headers } });
  const page = async (query: string, headers: Record<string, string> = {}): Promise<AuditLogsResponse> => {
    const res = await logs(query, headers);
    expect(res.status).toBe(200);
    return (await res.json()) as AuditLogsResponse;
  };
  const verify = async (headers: Record<string, string>): Promise<AuditChainVerification> => {
    const res = await svc.api('/api/v1/audit-logs/verify', { headers });
    expect(res.status).toBe(200);
    return (await res.json()) as AuditChainVerification;
  };
  /** A native record as a service publishes it, for an organization and time of the test's choosing. */
  const record = (org: string, time: Date, over: Partial<AuditRecord> = {}): AuditRecord => ({
    ...svc.app.get(AuditPublisher).build({ operation: 'create_api_key', identity: null, organization_id: org, workspace_id: randomUUID(), resources: [{ type: 'api_key', id: randomUUID() }] }),
    time: time.toISOString(),
    user_id: randomUUID(),
    credential_id: randomUUID(),
    credential_type: 'api_key',
    ...over,
  });
  const publish = (records: AuditRecord[]) =>
    svc.app.get(EventBus).publish(
      TOPICS.audit,
      records.map((r) => ({ key: r.organization_id ?? 'none', value: r })),
    );
  const newOrganization = async (plan: 'free' | 'plus' | 'enterprise' = 'enterprise') => {
    const o = await svc.app.get(IdentityService).createOrganization({ name: `audit-${randomUUID()}`, plan });
    return { ...o, headers: { 'x-api-key': o.api_key, 'x-organization-id': o.organization_id } };
  };

  it('routes /audit-logs to the audit service in the cluster form', () => {
    const up = { ingest: 'http://i', query: 'http://q', audit: 'http://a' };
    expect(routeFor('GET', '/api/v1/audit-logs', up)).toBe('http://a');
    expect(routeFor('GET', '/api/v1/audit-logs/verify', up)).toBe('http://a');
    expect(routeFor('GET', '/audit-logs', { ingest: 'http://i', query: 'http://q' })).toBe('');
  });

  it('records session update and delete, failures included, and serves them as OCSF API Activity events', async () => {
    const created = await svc.api('/api/v1/sessions', { method: 'POST', json: { name: `audited-${randomUUID()}` } });
    expect(created.status).toBe(200);
    const sessionId = ((await created.json()) as Json).id as string;
    expect((await svc.api(`/api/v1/sessions/${sessionId}`, { method: 'PATCH', json: { description: 'changed' } })).status).toBe(200);
    expect((await svc.api(`/api/v1/sessions/${sessionId}`, { method: 'DELETE' })).status).toBe(202);
    const missing = randomUUID();
    expect((await svc.api(`/api/v1/sessions/${missing}`, { method: 'DELETE' })).status).toBe(404);

    const body = await page('?operations=update_tracer_session&operations=delete_tracer_session&limit=100');
    const mine = body.items.filter((e) => e.resources.some((r) => r.uid === sessionId || r.uid === missing));
    expect(mine.map((e) => [e.api.operation, e.status, e.resources[0].uid])).toEqual([
      ['update_tracer_session', 'Success', sessionId],
      ['delete_tracer_session', 'Success', sessionId],
      ['delete_tracer_session', 'Failure', missing],
    ]);
    const [update, , failed] = mine;
    expect(update).toMatchObject({
      category_uid: 6,
      category_name: 'Application Activity',
      class_uid: 6003,
      class_name: 'API Activity',
      activity_id: 3,
      activity_name: 'Update',
      type_uid: 600303,
      status_id: 1,
      metadata: { version: '1.7.0' },
      api: { operation: 'update_tracer_session', service: { name: 'standalone' } },
      resources: [{ uid: sessionId, type: 'tracer_session' }],
      unmapped: { original_audit_log: { organization_id: svc.organizationId, workspace_id: svc.workspaceId, operation: 'update_tracer_session' } },
    });
    expect(update.actor.user.credential_uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(update.metadata.uid).toBe(update.unmapped.original_audit_log.id);
    expect(typeof update.time).toBe('number');
    expect(failed).toMatchObject({ activity_id: 4, activity_name: 'Delete', type_uid: 600304, status: 'Failure', status_id: 2 });
    expect(failed.status_detail).toContain('not found');
    expect(new Set(mine.map((e) => e.metadata.uid)).size).toBe(3);
  });

  it('pages the hourly pull with a stable cursor: a window [start, end), every event once, in time order', async () => {
    const org = await newOrganization();
    const hour = new Date(Math.floor((Date.now() - 2 * DAY) / 3_600_000) * 3_600_000);
    const at = (minutes: number) => new Date(hour.getTime() + minutes * 60_000);
    // 0 min is in (start is inclusive), 60 min is out (end is exclusive); one event per minute 0..24 plus outliers
    const inWindow = Array.from({ length: 25 }, (_, i) => record(org.organization_id, at(i * 2), { operation: i % 5 === 0 ? 'delete_api_key' : 'create_api_key' }));
    const outside = [record(org.organization_id, at(-1)), record(org.organization_id, at(60)), record(org.organization_id, at(61))];
    await publish([...inWindow.slice(0, 12), ...outside, ...inWindow.slice(12)]);
    const window = `start_time=${hour.toISOString()}&end_time=${at(60).toISOString()}`;

    const first = await page(`?${window}&limit=10`, org.headers);
    expect(first.items).toHaveLength(10);
    expect(first.next_cursor).toEqual(expect.any(String));
    // arrivals during the pull: one behind the cursor, one ahead of it
    const behind = record(org.organization_id, at(1));
    const ahead = record(org.organization_id, at(59));
    await publish([behind, ahead]);
    const seen = [...first.items];
    let cursor = first.next_cursor;
    for (let i = 0; i < 10 && cursor; i++) {
      const next = await page(`?${window}&limit=10&cursor=${encodeURIComponent(cursor)}`, org.headers);
      seen.push(...next.items);
      cursor = next.next_cursor;
    }
    expect(cursor).toBeNull();
    const ids = seen.map((e) => e.metadata.uid);
    expect(ids).toEqual([...inWindow.map((r) => r.id), ahead.id]);
    expect(new Set(ids).size).toBe(ids.length);
    // a fresh pull of the same window has everything, in time order
    const all = await page(`?${window}&limit=1000`, org.headers);
    const byTime = [...inWindow, behind, ahead].sort((a, b) => a.time.localeCompare(b.time)).map((r) => r.id);
    expect(all.items.map((e) => e.metadata.uid)).toEqual(byTime);
    expect(all.next_cursor).toBeNull();

    const deletes = await page(`?${window}&operations=delete_api_key`, org.headers);
    expect(deletes.items.map((e) => e.metadata.uid)).toEqual(inWindow.filter((r) => r.operation === 'delete_api_key').map((r) => r.id));
    // another organization's events never show
    const own = await page('?limit=1000');
    expect(own.items.some((e) => e.unmapped.original_audit_log.organization_id === org.organization_id)).toBe(false);
  });

  it('answers bad queries with 422 naming the problem, and writes nothing', async () => {
    const before = await verify({ 'x-organization-id': svc.organizationId });
    const cases: [string, (string | number)[], RegExp][] = [
      ['?start_time=2026-11-22T10:00:00Z&end_time=2026-11-22T09:00:00Z', ['query', 'end_time'], /end_time \(2026-11-22T09:00:00Z\) is before start_time/],
      ['?operations=drop_everything', ['query', 'operations'], /unknown operation "drop_everything"/],
      ['?operations=create_api_key&operations=drop_everything', ['query', 'operations', 1], /unknown operation "drop_everything"/],
      ['?limit=0', ['query', 'limit'], /./],
      ['?limit=1001', ['query', 'limit'], /./],
      ['?start_time=yesterday', ['query', 'start_time'], /ISO 8601/],
      ['?cursor=not-a-cursor', ['query', 'cursor'], /next_cursor/],
      ['?color=blue', ['query'], /color/],
    ];
    for (const [query, loc, msg] of cases) {
      const res = await logs(query);
      expect({ query, status: res.status }).toEqual({ query, status: 422 });
      const detail = ((await res.json()) as { detail: { loc: (string | number)[]; msg: string; type: string }[] }).detail;
      expect(detail[0].loc).toEqual(loc);
      expect(detail[0].msg).toMatch(msg);
      expect(typeof detail[0].type).toBe('string');
    }
    const after = await verify({ 'x-organization-id': svc.organizationId });
    expect(after.head).toEqual(before.head);
  });

  it('refuses callers without access: 401 without a key, 403 for another organization, other plans, workspace roles', async () => {
    expect((await fetch(`${svc.url}/api/v1/audit-logs`)).status).toBe(401);
    const other = await newOrganization();
    const cross = await logs('', { 'x-organization-id': other.organization_id });
    expect(cross.status).toBe(403);
    // the gateway or the audit service refuses it, whichever sees it first
    expect(((await cross.json()) as Json).detail).toMatch(/organization/);
    const plus = await newOrganization('plus');
    const plusRes = await svc.api('/api/v1/audit-logs', { headers: plus.headers });
    expect(plusRes.status).toBe(403);
    expect(((await plusRes.json()) as Json).detail).toMatch(/Enterprise/);
    const viewer = await newOrganization();
    await sql.query(`UPDATE gateway.api_keys SET permissions = $2 WHERE id = $1`, [viewer.api_key_id, ['workspace:read', 'runs:read', 'projects:read']]);
    for (const path of ['/api/v1/audit-logs', '/api/v1/audit-logs/verify']) {
      const res = await svc.api(path, { headers: viewer.headers });
      expect(res.status).toBe(403);
      expect(((await res.json()) as Json).detail).toMatch(/organization:manage/);
    }
  });

  it('verify reports the first break after a row is changed in PostgreSQL; the table refuses plain changes', async () => {
    const org = await newOrganization();
    const t0 = Date.now() - DAY;
    const recs = Array.from({ length: 6 }, (_, i) => record(org.organization_id, new Date(t0 + i * 1000)));
    await publish(recs);
    expect(await verify(org.headers)).toMatchObject({ organization_id: org.organization_id, ok: true, events_checked: 6, first_break: null, head: { seq: 6 } });

    await expect(sql.query(`UPDATE audit.events SET status = 'Failure' WHERE chain_key = $1`, [org.organization_id])).rejects.toThrow(/append-only/);
    await expect(sql.query(`DELETE FROM audit.events WHERE chain_key = $1`, [org.organization_id])).rejects.toThrow(/append-only/);

    await sql.query('BEGIN');
    await sql.query('SET LOCAL session_replication_role = replica');
    await sql.query(`UPDATE audit.events SET record = replace(record, 'create_api_key', 'delete_api_key') WHERE chain_key = $1 AND seq = 4`, [org.organization_id]);
    await sql.query('COMMIT');
    const broken = await verify(org.headers);
    expect(broken).toMatchObject({ ok: false, events_checked: 3, first_break: { seq: 4, event_id: recs[3].id, reason: 'the content of event 4 does not match its hash' } });
    // the verify command walks every chain and names the broken one
    const reports = await verifyChains(svc.app.get(AuditRepository), svc.app.get(ChainHasher));
    expect(reports.find((r) => r.chain_key === org.organization_id)?.first_break?.seq).toBe(4);
    expect(reports.find((r) => r.chain_key === svc.organizationId)?.ok).toBe(true);
    // the served event is still the stored one: tampering is visible, not hidden
    const listed = await page('?limit=100', org.headers);
    expect(listed.items.map((e: ApiActivityEvent) => e.api.operation)[3]).toBe('delete_api_key');
  });

  it('serves nothing older than the retention period and removes it with the chain still verifiable', async () => {
    const org = await newOrganization();
    const old = [record(org.organization_id, new Date(Date.now() - 500 * DAY)), record(org.organization_id, new Date(Date.now() - 401 * DAY))];
    const fresh = record(org.organization_id, new Date(Date.now() - 1000));
    await publish([...old, fresh]);
    expect((await page('?limit=100', org.headers)).items.map((e) => e.metadata.uid)).toEqual([fresh.id]);
    const result = await svc.app.get(AuditRetentionService).removeExpired(new Date());
    expect(result.removed).toBeGreaterThanOrEqual(2);
    const rows = (await sql.query(`SELECT id FROM audit.events WHERE chain_key = $1 ORDER BY seq`, [org.organization_id])).rows;
    expect(rows).toEqual([{ id: fresh.id }]);
    expect(await verify(org.headers)).toMatchObject({ ok: true, events_checked: 1, anchor: { seq: 2 }, head: { seq: 3 } });
  });
});

describe('audit logs when the installation leaves them off', () => {
  let svc: TestStandalone;
  beforeAll(async () => {
    svc = await startTestStandalone({ DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: 'false' });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('answers 403 to an Enterprise organization without can_use_audit_logs', async () => {
    const res = await svc.api('/api/v1/audit-logs', { headers: { 'x-organization-id': svc.organizationId } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as Json).detail).toMatch(/not enabled/);
  });
});
