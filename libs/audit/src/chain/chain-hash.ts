import { createHash, createHmac } from 'node:crypto';

/** JSON with object keys sorted at every level, so one record always has one text (and one hash). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** How a chain's hashes are computed: where it starts, and what binds each event to the one before. */
export interface ChainHashing {
  /** The hash a chain starts from: distinct per chain, so events cannot be moved between organizations. */
  genesis(chainKey: string): string;
  /** An event's hash binds its chain, its position, the previous event's hash and the record's canonical text. */
  event(prevHash: string, chainKey: string, seq: number, recordText: string): string;
}

/** At least this many characters of AUDIT_CHAIN_KEY. */
export const MIN_CHAIN_KEY_LENGTH = 32;

/**
 * The chain as stored since chain keys: HMAC-SHA256 under AUDIT_CHAIN_KEY, a key the database does not
 * hold, so whoever can write the database cannot recompute a changed event's hash (nor the rest of the
 * chain after it) without the verifier noticing.
 */
export class ChainHasher implements ChainHashing {
  private readonly key: Buffer;
  constructor(key: string) {
    if (key.length < MIN_CHAIN_KEY_LENGTH) throw new Error(`The audit chain key must be at least ${MIN_CHAIN_KEY_LENGTH} characters`);
    this.key = Buffer.from(key, 'utf8');
  }

  genesis(chainKey: string): string {
    return createHmac('sha256', this.key).update(`tracehouse.audit.genesis.v2\n${chainKey}`).digest('hex');
  }

  event(prevHash: string, chainKey: string, seq: number, recordText: string): string {
    return createHmac('sha256', this.key).update(`${prevHash}\n${chainKey}\n${seq}\n${recordText}`).digest('hex');
  }
}

/**
 * The chain as stored before chain keys (plain SHA-256, which anyone can recompute). Only
 * rekeyUnkeyedChains reads it, to convert such chains once; the verifier never accepts it.
 */
export const UNKEYED_CHAIN_HASHING: ChainHashing = {
  genesis: (chainKey) => createHash('sha256').update(`tracehouse.audit.genesis\n${chainKey}`).digest('hex'),
  event: (prevHash, chainKey, seq, recordText) => createHash('sha256').update(`${prevHash}\n${chainKey}\n${seq}\n${recordText}`).digest('hex'),
};

/** Events without an organization (e.g. a failure before the caller was known) share this chain. */
export const NO_ORGANIZATION_CHAIN = '';
export const chainKeyOf = (organizationId: string | null): string => organizationId ?? NO_ORGANIZATION_CHAIN;
