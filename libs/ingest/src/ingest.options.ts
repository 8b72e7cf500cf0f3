export interface IngestOptions {
  /** Run the writer role (consume runs, write ClickHouse) in this process. */
  writer: boolean;
  writerMaxBatch: number;
  writerCacheEntries: number;
  maxBodyBytes: number;
  batchSizeLimit: number;
}
export const INGEST_OPTIONS = Symbol('INGEST_OPTIONS');
