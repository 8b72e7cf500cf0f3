import { auditRecordSchema, type AuditRecord } from '@th/contracts';
import { METRICS } from '@th/platform';
import { canonicalJson, chainKeyOf, type ChainHashing } from '../chain/chain-hash';
import { AuditRepository, type NewEvent } from './audit.repository';

export interface AppendResult {
  stored: number;
  /** Re-deliveries of records already stored (same id, same content): kept once. */
  duplicates: number;
  /** Records whose id is already taken by a different record. */
  conflicts: { record: AuditRecord; reason: string }[];
}

/** Appends native records to their organization's hash chain, exactly once per record id. */
export class AuditStore {
  constructor(
    private readonly repo: AuditRepository,
    private readonly hashing: ChainHashing,
  ) {}

  async append(records: AuditRecord[]): Promise<AppendResult> {
    const byChain = new Map<string, AuditRecord[]>();
    for (const r of records) {
      const key = chainKeyOf(r.organization_id);
      const list = byChain.get(key);
      if (list) list.push(r);
      else byChain.set(key, [r]);
    }
    const total: AppendResult = { stored: 0, duplicates: 0, conflicts: [] };
    // One transaction per chain: a chain's head is locked only while its own events are appended.
    for (const [chainKey, list] of byChain) {
      const r = await this.appendToChain(chainKey, list).catch((err: unknown) => {
        METRICS.auditAppends.inc({ outcome: 'failed' }, list.length);
        throw err;
      });
      METRICS.auditAppends.inc({ outcome: 'stored' }, r.stored);
      METRICS.auditAppends.inc({ outcome: 'duplicate' }, r.duplicates);
      METRICS.auditAppends.inc({ outcome: 'conflict' }, r.conflicts.length);
      total.stored += r.stored;
      total.duplicates += r.duplicates;
      total.conflicts.push(...r.conflicts);
    }
    return total;
  }

  private appendToChain(chainKey: string, records: AuditRecord[]): Promise<AppendResult> {
    return this.repo.transaction(async (tx) => {
      const head = await tx.lockChain(chainKey, this.hashing.genesis(chainKey));
      const existing = await tx.existing([...new Set(records.map((r) => r.id))]);
      const result: AppendResult = { stored: 0, duplicates: 0, conflicts: [] };
      const events: NewEvent[] = [];
      let seq = head.head_seq;
      let prev = head.head_hash;
      for (const record of records) {
        // Stored text is the canonical form of the validated record: what is hashed is what is served.
        const text = canonicalJson(auditRecordSchema.parse(record));
        const seen = existing.get(record.id);
        if (seen !== undefined) {
          if (seen === text) result.duplicates++;
          else result.conflicts.push({ record, reason: `audit record id ${record.id} is already stored with different content` });
          continue;
        }
        existing.set(record.id, text);
        seq++;
        const hash = this.hashing.event(prev, chainKey, seq, text);
        events.push({
          seq,
          id: record.id,
          time: record.time,
          operation: record.operation,
          status: record.status,
          organization_id: record.organization_id,
          workspace_id: record.workspace_id,
          record: text,
          prev_hash: prev,
          hash,
        });
        prev = hash;
      }
      if (events.length > 0) {
        await tx.insert(chainKey, events);
        await tx.setHead(chainKey, seq, prev);
      }
      result.stored = events.length;
      return result;
    });
  }
}
