import { auditRecordSchema } from '@th/contracts';
import { UNKEYED_CHAIN_HASHING, canonicalJson, type ChainHashing } from './chain-hash';
import type { AuditRepository, ChainHead, StoredEventRow } from '../store/audit.repository';

export interface ChainBreak {
  seq: number;
  event_id: string | null;
  reason: string;
}

export interface ChainReport {
  chain_key: string;
  ok: boolean;
  events_checked: number;
  anchor: { seq: number; hash: string };
  head: { seq: number; hash: string };
  first_break: ChainBreak | null;
}

const PAGE = 2000;

/** Checks one stored event against the previous one; the reason of the first mismatch, or null. */
function checkEvent(hashing: ChainHashing, row: StoredEventRow, expectedSeq: number, expectedPrev: string): string | null {
  if (row.seq !== expectedSeq) {
    return row.seq > expectedSeq
      ? `event(s) ${expectedSeq}..${row.seq - 1} are missing: the chain continues at ${row.seq}`
      : `event ${row.seq} is out of order (expected ${expectedSeq})`;
  }
  if (row.prev_hash !== expectedPrev) return `prev_hash does not match the hash of event ${expectedSeq - 1}`;
  if (hashing.event(row.prev_hash, row.chain_key, row.seq, row.record) !== row.hash) return `the content of event ${row.seq} does not match its hash`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(row.record);
  } catch {
    return `the record of event ${row.seq} is not JSON`;
  }
  const record = auditRecordSchema.safeParse(parsed);
  if (!record.success || canonicalJson(record.data) !== row.record) return `the record of event ${row.seq} is not a canonical audit record`;
  const r = record.data;
  if (
    r.id !== row.id ||
    r.operation !== row.operation ||
    r.status !== row.status ||
    r.organization_id !== row.organization_id ||
    r.workspace_id !== row.workspace_id ||
    Date.parse(r.time) !== Date.parse(row.time_key)
  ) {
    return `the indexed columns of event ${row.seq} differ from its hashed record`;
  }
  return null;
}

/**
 * Walks a chain from its anchor (genesis, or the hash of the last event retention removed) to its
 * head, in pages, and reports the first break: a changed, removed, reordered or inserted event.
 * `hashing` is the keyed ChainHasher (UNKEYED_CHAIN_HASHING only to recognize chains stored before keys).
 */
export async function verifyChain(repo: AuditRepository, hashing: ChainHashing, chainKey: string, upto?: { seq: number }): Promise<ChainReport> {
  const head: ChainHead = (await repo.head(chainKey)) ?? {
    chain_key: chainKey,
    head_seq: 0,
    head_hash: hashing.genesis(chainKey),
    anchor_seq: 0,
    anchor_hash: hashing.genesis(chainKey),
  };
  const report = (first_break: ChainBreak | null, checked: number): ChainReport => ({
    chain_key: chainKey,
    ok: first_break === null,
    events_checked: checked,
    anchor: { seq: head.anchor_seq, hash: head.anchor_hash },
    head: { seq: head.head_seq, hash: head.head_hash },
    first_break,
  });
  if (head.anchor_seq === 0 && head.anchor_hash !== hashing.genesis(chainKey)) {
    return report({ seq: 0, event_id: null, reason: 'the chain anchor is not the genesis hash of this organization' }, 0);
  }
  const last = upto?.seq ?? head.head_seq;
  let expectedSeq = head.anchor_seq + 1;
  let expectedPrev = head.anchor_hash;
  let checked = 0;
  for (;;) {
    // Read past the head too: an event appended behind the head's back is a break as well.
    const rows = await repo.chainPage(chainKey, expectedSeq - 1, upto ? last : Number.MAX_SAFE_INTEGER, PAGE);
    for (const row of rows) {
      if (row.seq > last) return report({ seq: row.seq, event_id: row.id, reason: `event ${row.seq} lies beyond the chain head ${last}` }, checked);
      const reason = checkEvent(hashing, row, expectedSeq, expectedPrev);
      if (reason) return report({ seq: row.seq, event_id: row.id, reason }, checked);
      checked++;
      expectedSeq++;
      expectedPrev = row.hash;
    }
    if (rows.length < PAGE) break;
  }
  if (expectedSeq - 1 !== last) {
    return report({ seq: expectedSeq, event_id: null, reason: `event(s) ${expectedSeq}..${last} are missing: the chain head is ${last}` }, checked);
  }
  if (!upto && expectedPrev !== head.head_hash) {
    return report({ seq: last, event_id: null, reason: `the chain head's hash does not match event ${last}` }, checked);
  }
  return report(null, checked);
}

/** The verify command: every chain (or the named ones), each from its anchor to its head. */
export async function verifyChains(repo: AuditRepository, hashing: ChainHashing, chainKeys?: string[]): Promise<ChainReport[]> {
  const reports: ChainReport[] = [];
  for (const chain of chainKeys?.length ? chainKeys : await repo.chainKeys()) reports.push(await verifyChain(repo, hashing, chain));
  return reports;
}

export interface RekeyReport {
  chain_key: string;
  /** keyed: verifies under the key already; rekeyed: verified unkeyed and now keyed; broken: verifies neither way, left as is. */
  outcome: 'keyed' | 'rekeyed' | 'broken';
  events: number;
}

/**
 * Converts chains stored before chain keys (plain SHA-256) to the keyed hash, each after it verifies
 * unkeyed. Run once per installation, by the operator (the verify command's --rekey-unkeyed) or by the
 * standalone service in the start that generates its key: never on an ordinary start, or whoever can
 * write the database could rebuild a chain unkeyed and have it re-signed by the next restart.
 */
export async function rekeyUnkeyedChains(repo: AuditRepository, hasher: ChainHashing): Promise<RekeyReport[]> {
  const out: RekeyReport[] = [];
  for (const chainKey of await repo.chainKeys()) {
    const outcome = await repo.transaction(async (tx): Promise<RekeyReport> => {
      const head = await tx.lockChain(chainKey, hasher.genesis(chainKey));
      const keyed = await verifyChain(repo, hasher, chainKey);
      if (keyed.ok) return { chain_key: chainKey, outcome: 'keyed', events: keyed.events_checked };
      const unkeyed = await verifyChain(repo, UNKEYED_CHAIN_HASHING, chainKey);
      if (!unkeyed.ok) return { chain_key: chainKey, outcome: 'broken', events: 0 };
      // A chain whose prefix retention removed keeps its anchor: the first keyed event binds it.
      let prev = head.anchor_seq === 0 ? hasher.genesis(chainKey) : head.anchor_hash;
      const anchor = prev;
      const rehashed: { seq: number; prev_hash: string; hash: string }[] = [];
      for (let after = head.anchor_seq; ; ) {
        const rows = await repo.chainPage(chainKey, after, head.head_seq, 2000);
        for (const row of rows) {
          const hash = hasher.event(prev, chainKey, row.seq, row.record);
          rehashed.push({ seq: row.seq, prev_hash: prev, hash });
          prev = hash;
          after = row.seq;
        }
        if (rows.length < 2000) break;
      }
      await tx.rehash(chainKey, rehashed, anchor, prev);
      return { chain_key: chainKey, outcome: 'rekeyed', events: rehashed.length };
    });
    out.push(outcome);
  }
  return out;
}
