import { isCanonicalIso, toEpochMicros } from '@th/contracts';

/** ClickHouse DateTime64(6) text, UTC, from an ISO 8601 timestamp. */
export function chTime(iso: string): string {
  if (isCanonicalIso(iso)) return `${iso.slice(0, 10)} ${iso.slice(11, 26)}`;
  const micros = toEpochMicros(iso) ?? 0;
  const ms = Math.floor(micros / 1000);
  const base = new Date(ms).toISOString(); // 2026-11-22T04:04:29.623Z
  return `${base.slice(0, 10)} ${base.slice(11, 23)}${String(micros - ms * 1000).padStart(3, '0')}`;
}

/** ISO 8601 (UTC, `Z`) from ClickHouse's DateTime64 text; an ISO value passes as it is. */
export const isoFromCh = (v: string): string => (v.endsWith('Z') ? v : `${v.replace(' ', 'T')}Z`);
