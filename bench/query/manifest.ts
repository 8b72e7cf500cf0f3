import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SampleId } from './dataset';

/** What a seeded benchmark directory holds, so a later run can reuse it (--data-dir) without reseeding. */
export interface Manifest {
  format: 1;
  apiKey: string;
  tenantId: string;
  projects: { id: string; name: string; weight: number }[];
  runs: number;
  seed: number;
  chunkRows: number;
  settleSeconds: number;
  windowStartMs: number;
  windowEndMs: number;
  seeded?: SeedResult;
}

export interface SeedResult {
  runs: number;
  traces: number;
  error_runs: number;
  error_roots: number;
  seconds: number;
  runs_per_s: number;
  build_s: number;
  insert_wait_s: number;
  json_mb: number;
  json_bytes_per_run: number;
  inserts: number;
  settle_s: number;
  merges_running_at_end: number;
  parts: { partition: string; parts: number; rows: number; mb_on_disk: number; mb_uncompressed: number }[];
  per_project: number[];
  roots_per_project: number[];
  sample_roots: SampleId[];
  sample_children: SampleId[];
}

const file = (dir: string) => join(dir, 'manifest.json');

export function readManifest(dir: string): Manifest | null {
  return existsSync(file(dir)) ? (JSON.parse(readFileSync(file(dir), 'utf8')) as Manifest) : null;
}

export function writeManifest(dir: string, m: Manifest): void {
  writeFileSync(`${file(dir)}.tmp`, JSON.stringify(m));
  renameSync(`${file(dir)}.tmp`, file(dir));
}
