import { FEATURE_VERSION_GATES, compareVersions, offeredFeatures } from './info.controller';

describe('version-gated features', () => {
  it('compares dotted versions numerically', () => {
    expect(compareVersions('0.12.42', '0.12.33')).toBe(1);
    expect(compareVersions('0.12.33', '0.12.33')).toBe(0);
    expect(compareVersions('0.10.109', '0.10.42')).toBe(1);
    expect(compareVersions('v0.9.999', '0.10.0')).toBe(-1);
    expect(compareVersions('0.12.42-rc.1', '0.12.42')).toBe(0);
    expect(compareVersions('1.0', '0.12.42')).toBe(1);
  });

  it('follows the spec table: a feature needs its service and its application version', () => {
    const all = { scheduled_exports: true, export_fields: true, audit_logs: true };
    expect(FEATURE_VERSION_GATES).toEqual({ scheduled_exports: '0.10.109', export_fields: '0.12.42', audit_logs: '0.12.33' });
    expect(offeredFeatures('0.1.0', all)).toEqual({ scheduled_exports: false, export_fields: false, audit_logs: false });
    expect(offeredFeatures('0.10.109', all)).toEqual({ scheduled_exports: true, export_fields: false, audit_logs: false });
    expect(offeredFeatures('0.12.33', all)).toEqual({ scheduled_exports: true, export_fields: false, audit_logs: true });
    expect(offeredFeatures('0.12.42', all)).toEqual(all);
    expect(offeredFeatures('0.12.42', { audit_logs: true })).toEqual({ scheduled_exports: false, export_fields: false, audit_logs: true });
    expect(offeredFeatures('0.12.42')).toEqual({ scheduled_exports: false, export_fields: false, audit_logs: false });
  });
});
