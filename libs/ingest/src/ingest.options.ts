export interface IngestOptions {
  /** Run the writer role (consume runs, write ClickHouse) in this process. */
  writer: boolean;
  writerMaxBatch: number;
  writerCacheEntries: number;
  /** In process: a further writer batch starts while one is busy once this many events wait (see InProcessBus). */
  writerParallelBacklog?: number;
  maxBodyBytes: number;
  batchSizeLimit: number;
}
export const INGEST_OPTIONS = Symbol('INGEST_OPTIONS');
