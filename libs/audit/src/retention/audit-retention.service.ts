import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ChainHasher } from '../chain/chain-hash';
import { rekeyUnkeyedChains, verifyChain } from '../chain/chain-verifier';
import { AUDIT_OPTIONS, MAX_RETENTION_DAYS, type AuditOptions } from '../audit.options';
import { AuditRepository } from '../store/audit.repository';

export interface RetentionResult {
  cutoff: string;
  removed: number;
  chains: number;
  /** Chains left untouched because the part due for removal does not verify: the evidence is kept. */
  refused: { chain_key: string; reason: string }[];
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Removes events older than the retention period, as a prefix of each chain, and records the hash of
 * the last removed event as the chain's new anchor, so what remains still verifies from its anchor.
 */
@Injectable()
export class AuditRetentionService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('audit-retention');
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;

  constructor(
    private readonly repo: AuditRepository,
    private readonly hasher: ChainHasher,
    @Inject(AUDIT_OPTIONS) private readonly options: AuditOptions,
  ) {}

  async onModuleInit(): Promise<void> {
    if (this.options.rekeyUnkeyedChains) {
      const reports = await rekeyUnkeyedChains(this.repo, this.hasher);
      const rekeyed = reports.filter((r) => r.outcome === 'rekeyed');
      const broken = reports.filter((r) => r.outcome === 'broken').map((r) => r.chain_key);
      if (rekeyed.length > 0) this.logger.log({ msg: 'audit chains stored before chain keys now keyed', chains: rekeyed.length, events: rekeyed.reduce((n, r) => n + r.events, 0) });
      if (broken.length > 0) this.logger.error({ msg: 'audit chains that verify neither keyed nor unkeyed were left as they are', chains: broken });
    }
    const minutes = this.options.retentionIntervalMinutes;
    if (minutes <= 0) return;
    this.timer = setInterval(() => this.runScheduled(), minutes * 60_000);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  cutoff(now: Date): Date {
    const days = Math.min(this.options.retentionDays, MAX_RETENTION_DAYS);
    return new Date(now.getTime() - days * DAY_MS);
  }

  private runScheduled(): void {
    if (this.running) return;
    this.running = this.removeExpired(new Date())
      .then((r) => {
        if (r.removed > 0 || r.refused.length > 0) this.logger.log({ msg: 'audit retention', ...r });
      })
      .catch((err: unknown) => this.logger.error({ msg: 'audit retention failed', error: String(err) }))
      .finally(() => {
        this.running = null;
      });
  }

  async removeExpired(now: Date): Promise<RetentionResult> {
    const cutoff = this.cutoff(now);
    const result: RetentionResult = { cutoff: cutoff.toISOString(), removed: 0, chains: 0, refused: [] };
    for (const chainKey of await this.repo.chainsWithExpired(cutoff)) {
      const outcome = await this.repo.transaction(async (tx) => {
        // The head lock keeps appends to this chain out while its prefix is checked and removed.
        const head = await tx.lockChain(chainKey, this.hasher.genesis(chainKey));
        const firstKept = await tx.firstSeqSince(chainKey, cutoff);
        const upto = firstKept === null ? head.head_seq : firstKept - 1;
        if (upto <= head.anchor_seq) return { removed: 0 };
        const check = await verifyChain(this.repo, this.hasher, chainKey, { seq: upto });
        if (!check.ok) return { removed: 0, refused: check.first_break?.reason ?? 'does not verify' };
        const anchor = await tx.hashAt(chainKey, upto);
        if (anchor === null) return { removed: 0, refused: `event ${upto} is missing` };
        return { removed: await tx.removePrefix(chainKey, upto, anchor) };
      });
      if ('refused' in outcome && outcome.refused) {
        this.logger.error({ msg: 'audit retention refused: the chain does not verify', chain_key: chainKey, reason: outcome.refused });
        result.refused.push({ chain_key: chainKey, reason: outcome.refused });
        continue;
      }
      if (outcome.removed > 0) {
        result.removed += outcome.removed;
        result.chains++;
      }
    }
    return result;
  }
}
