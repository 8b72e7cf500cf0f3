import { auditRecordSchema } from '@th/contracts';
import { canonicalJson, eventHash, genesisHash } from './chain-hash';
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
function checkEvent(row: StoredEventRow, expectedSeq: number, expectedPrev: string): string | null {
  if (row.seq !== expectedSeq) {
    return row.seq > expectedSeq
      ? `event(s) ${expectedSeq}..${row.seq - 1} are missing: the chain continues at ${row.seq}`
      : `event ${row.seq} is out of order (expected ${expectedSeq})`;
  }
  if (row.prev_hash !== expectedPrev) return `prev_hash does not match the hash of event ${expectedSeq - 1}`;
  if (eventHash(row.prev_hash, row.chain_key, row.seq, row.record) !== row.hash) return `the content of event ${row.seq} does not match its hash`;
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
 */
export async function verifyChain(repo: AuditRepository, chainKey: string, upto?: { seq: number }): Promise<ChainReport> {
  const head: ChainHead = (await repo.head(chainKey)) ?? {
    chain_key: chainKey,
    head_seq: 0,
    head_hash: genesisHash(chainKey),
    anchor_seq: 0,
    anchor_hash: genesisHash(chainKey),
  };
  const report = (first_break: ChainBreak | null, checked: number): ChainReport => ({
    chain_key: chainKey,
    ok: first_break === null,
    events_checked: checked,
    anchor: { seq: head.anchor_seq, hash: head.anchor_hash },
    head: { seq: head.head_seq, hash: head.head_hash },
    first_break,
  });
  if (head.anchor_seq === 0 && head.anchor_hash !== genesisHash(chainKey)) {
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
      const reason = checkEvent(row, expectedSeq, expectedPrev);
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
export async function verifyChains(repo: AuditRepository, chainKeys?: string[]): Promise<ChainReport[]> {
  const reports: ChainReport[] = [];
  for (const chain of chainKeys?.length ? chainKeys : await repo.chainKeys()) reports.push(await verifyChain(repo, chain));
  return reports;
}
