import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level, so one record always has one text (and one hash). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** The hash a chain starts from: distinct per chain, so events cannot be moved between organizations. */
export function genesisHash(chainKey: string): string {
  return createHash('sha256').update(`tracehouse.audit.genesis\n${chainKey}`).digest('hex');
}

/** An event's hash binds its chain, its position, the previous event's hash and the record's canonical text. */
export function eventHash(prevHash: string, chainKey: string, seq: number, recordText: string): string {
  return createHash('sha256').update(`${prevHash}\n${chainKey}\n${seq}\n${recordText}`).digest('hex');
}

/** Events without an organization (e.g. a failure before the caller was known) share this chain. */
export const NO_ORGANIZATION_CHAIN = '';
export const chainKeyOf = (organizationId: string | null): string => organizationId ?? NO_ORGANIZATION_CHAIN;
