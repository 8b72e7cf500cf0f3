import type { MergedRun } from './run-merge';

/**
 * Recently written runs, by tenant and id. Valid only while this writer owns the partitions the
 * runs hash to: the writer clears it on every rebalance. Bounded in entries (oldest out first).
 */
export class RunCache {
  private readonly map = new Map<string, MergedRun>();
  constructor(private readonly maxEntries: number) {}

  static key(tenantId: string, id: string): string {
    return `${tenantId}:${id}`;
  }
  get(key: string): MergedRun | undefined {
    return this.map.get(key);
  }
  set(key: string, run: MergedRun): void {
    this.map.delete(key);
    this.map.set(key, run);
    while (this.map.size > this.maxEntries) {
      const oldest = this.map.keys().next().value;
      if (oldest === undefined) break;
      this.map.delete(oldest);
    }
  }
  delete(key: string): void {
    this.map.delete(key);
  }
  deleteWhere(pred: (run: MergedRun) => boolean): void {
    for (const [k, v] of this.map) if (pred(v)) this.map.delete(k);
  }
  clear(): void {
    this.map.clear();
  }
  get size(): number {
    return this.map.size;
  }
}
