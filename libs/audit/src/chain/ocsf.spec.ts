import { TRACKED_OPERATIONS, apiActivityEventSchema } from '@th/contracts';
import { auditRecord } from '@th/testing';
import { activityIdOf, renderApiActivity } from './ocsf';

describe('OCSF 1.7.0 API Activity rendering', () => {
  it('maps every tracked operation to an OCSF activity', () => {
    const ids = new Set([1, 2, 3, 4, 99]);
    for (const op of TRACKED_OPERATIONS) expect(ids.has(activityIdOf(op))).toBe(true);
    expect([activityIdOf('create_api_key'), activityIdOf('read_access_policy'), activityIdOf('update_ttl_settings'), activityIdOf('delete_dataset'), activityIdOf('test_prompt_webhook')]).toEqual([1, 2, 3, 4, 99]);
  });

  it('renders the native record into class 6003 with the record kept under unmapped', () => {
    const rec = auditRecord('org-1', {
      operation: 'delete_tracer_session',
      status: 'Failure',
      error: 'Project x not found',
      time: '2026-11-22T10:00:00.123Z',
      request: { method: 'DELETE', path: '/api/v1/sessions/x', ip: '127.0.0.1', user_agent: 'sdk' },
    });
    const stored_at = new Date('2026-11-22T10:00:01.000Z');
    const e = renderApiActivity(rec, { seq: 7, prev_hash: 'a', hash: 'b', stored_at }, '1.2.3');
    expect(apiActivityEventSchema.parse(e)).toEqual(e);
    expect(e).toMatchObject({
      category_uid: 6,
      class_uid: 6003,
      class_name: 'API Activity',
      activity_id: 4,
      activity_name: 'Delete',
      type_uid: 600304,
      type_name: 'API Activity: Delete',
      status: 'Failure',
      status_id: 2,
      status_detail: 'Project x not found',
      time: Date.parse('2026-11-22T10:00:00.123Z'),
      time_dt: '2026-11-22T10:00:00.123Z',
      metadata: { uid: rec.id, version: '1.7.0', product: { name: 'Tracehouse', version: '1.2.3' }, logged_time: stored_at.getTime() },
      actor: { user: { uid: rec.user_id, credential_uid: rec.credential_id, type: 'api_key' } },
      api: { operation: 'delete_tracer_session', service: { name: 'gateway' } },
      resources: [{ uid: rec.resources[0].id, type: 'api_key' }],
      src_endpoint: { ip: '127.0.0.1' },
      http_request: { http_method: 'DELETE', url: { path: '/api/v1/sessions/x' }, user_agent: 'sdk' },
      unmapped: { original_audit_log: rec, chain: { seq: 7, prev_hash: 'a', hash: 'b' } },
    });
  });

  it('leaves credential_uid null for session authentication', () => {
    const e = renderApiActivity(auditRecord('o', { credential_id: null, credential_type: 'session' }), { seq: 1, prev_hash: 'a', hash: 'b', stored_at: new Date() }, 'v');
    expect(e.actor.user.credential_uid).toBeNull();
    expect(e.status_id).toBe(1);
  });
});
