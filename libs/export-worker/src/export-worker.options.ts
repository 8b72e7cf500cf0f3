import type { DataSource } from 'typeorm';
import type { ParquetCompression } from './writer/run-parquet';

export const EXPORTS_SCHEMA = 'exports';

export interface ExportWorkerOptions {
  dataSource: DataSource;
  /** Secret the destination credentials are encrypted with (AES-256-GCM). */
  encryptionKey: string;
  /** Run the worker role (take and run exports, spawn scheduled windows) in this process. */
  worker: boolean;
  /** Exports this process runs at once. */
  maxConcurrent: number;
  /** How often the worker looks for due exports, expired leases, scheduled windows and timeouts. */
  pollMs: number;
  leaseMs: number;
  /** Runs per Parquet file at most (a file also ends where the day changes). */
  rowsPerFile: number;
  /** Rows and bytes (before compression) per Parquet row group at most: the engine holds one row group in memory while writing. */
  rowGroupRows: number;
  rowGroupBytes: number;
  /** Parquet page compression (UNCOMPRESSED, GZIP, SNAPPY, BROTLI). */
  compression: ParquetCompression;
  /** Attempts of one export (failures, not worker deaths: those resume under a new lease) before it is FAILED. */
  maxAttempts: number;
  /** Back-off before attempt n+1 is n times this. */
  retryDelayMs: number;
  /** The spec's 72-hour runtime timeout. */
  maxRuntimeMs: number;
  /** A spawned export runs this long after its window ends (the spec's 10 minutes). */
  spawnDelayMs: number;
  /** OUTBOUND_ALLOWED_HOSTS: private hosts destinations may reach (see OutboundPolicy). */
  outboundAllowedHosts: string;
}

export const EXPORT_WORKER_OPTIONS = Symbol('EXPORT_WORKER_OPTIONS');

export const EXPORT_DEFAULTS = {
  maxConcurrent: 2,
  pollMs: 5_000,
  leaseMs: 60_000,
  rowsPerFile: 250_000,
  rowGroupRows: 100_000,
  rowGroupBytes: 64 * 1024 * 1024,
  compression: 'GZIP' as ParquetCompression,
  maxAttempts: 3,
  retryDelayMs: 30_000,
  maxRuntimeMs: 72 * 3_600_000,
  spawnDelayMs: 10 * 60_000,
  outboundAllowedHosts: '',
} as const;
