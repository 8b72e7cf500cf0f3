import { randomUUID } from 'node:crypto';
import type { Identity } from '@th/contracts';
import type { AuditOptions } from '../audit.options';
import type { ChainHasher } from '../chain/chain-hash';
import type { AuditRetentionService } from '../retention/audit-retention.service';
import type { AuditRepository } from '../store/audit.repository';
import { AuditLogsService } from './audit-logs.service';

/** Who may read audit logs: the decision alone (the HTTP path is covered by the standalone e2e spec). */
describe('audit logs: access', () => {
  const options = (defaultOn: boolean): AuditOptions => ({ productVersion: 't', defaultOrgFeatureCanUseAuditLogs: defaultOn, retentionDays: 400, retentionIntervalMinutes: 0, chainKey: 'test-audit-chain-key-0123456789abcdef' });
  const service = (defaultOn: boolean) => new AuditLogsService(null as unknown as AuditRepository, null as unknown as AuditRetentionService, null as unknown as ChainHasher, options(defaultOn));
  const org = randomUUID();
  const admin = (over: Partial<Identity> = {}): Identity => ({
    organization_id: org,
    tenant_id: randomUUID(),
    user_id: null,
    credential_id: randomUUID(),
    credential_type: 'api_key',
    plan: 'enterprise',
    permissions: ['organization:manage', 'workspace:read'],
    ...over,
  });
  const refusal = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      return (err as Error).message;
    }
    return 'allowed';
  };

  it('allows an Enterprise organization with audit logs on and organization:manage, by header or without it', () => {
    expect(service(true).authorize(admin(), org)).toBe(org);
    expect(service(true).authorize(admin(), org.toUpperCase())).toBe(org);
    expect(service(true).authorize(admin(), undefined)).toBe(org);
    expect(service(false).authorize(admin({ org_features: { can_use_audit_logs: true } }), org)).toBe(org);
  });

  it('refuses another organization, other plans, a missing feature and workspace roles', () => {
    const other = randomUUID();
    expect(refusal(() => service(true).authorize(admin(), other))).toBe(`These credentials cannot act in organization ${other}`);
    expect(refusal(() => service(true).authorize(admin({ plan: 'plus' }), org))).toBe('Audit logs require an Enterprise plan');
    expect(refusal(() => service(true).authorize(admin({ plan: 'free' }), org))).toBe('Audit logs require an Enterprise plan');
    expect(refusal(() => service(false).authorize(admin(), org))).toMatch(/not enabled for this organization/);
    expect(refusal(() => service(true).authorize(admin({ permissions: ['workspace:read', 'workspace:write', 'projects:write'] }), org))).toMatch(/organization:manage/);
  });

  it('lets the stored organization setting win over the installation default, which skips personal organizations', () => {
    expect(refusal(() => service(true).authorize(admin({ org_features: { can_use_audit_logs: false } }), org))).toMatch(/not enabled/);
    expect(refusal(() => service(true).authorize(admin({ org_features: { is_personal: true } }), org))).toMatch(/not enabled/);
    expect(service(true).authorize(admin({ org_features: { is_personal: false } }), org)).toBe(org);
  });
});
