export interface IngestOptions {
  /** Run the writer role (consume runs, write ClickHouse) in this process. */
  writer: boolean;
  writerMaxBatch: number;
  writerCacheEntries: number;
  /** See GroupInsertOptions.lingerMs; DEFAULT_GROUP_INSERT_OPTIONS when unset. */
  writerLingerMs?: number;
  /**
   * No other process writes runs or price maps to this ClickHouse (standalone): the writer then skips
   * the lookup of runs that cannot be stored yet (see NewRunFilter) and keeps the price maps in memory
   * (see PriceMapCache). Never set where several processes share the store.
   */
  soleWriter?: boolean;
  /** In process: a further writer batch starts while one is busy once this many events wait (see InProcessBus). */
  writerParallelBacklog?: number;
  maxBodyBytes: number;
  batchSizeLimit: number;
}
export const INGEST_OPTIONS = Symbol('INGEST_OPTIONS');
