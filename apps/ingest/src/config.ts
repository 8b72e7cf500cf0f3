import { z } from 'zod';
import { bool, clickhouseConfigShape, clusterServiceConfigShape, port } from '@th/config';

/** Every setting this app reads from its environment (docker-compose.yml and deploy/k8s set them; config.spec.ts checks both). */
export const ingestConfigSchema = z.object({
  ...clusterServiceConfigShape,
  ...clickhouseConfigShape,
  PORT: port(8081),
  QUERY_URL: z.string().url(),
  INGEST_WRITER: bool(true),
  INGEST_BATCH_SIZE_LIMIT: z.coerce.number().int().min(1).default(100),
  WRITER_MAX_BATCH: z.coerce.number().int().min(1).default(20_000),
  WRITER_CACHE_ENTRIES: z.coerce.number().int().min(0).default(100_000),
  /** Milliseconds rows that came in during an insert may gather before the next insert starts (0: at once). */
  WRITER_LINGER_MS: z.coerce.number().int().min(0).max(1_000).default(20),
});
export type IngestConfig = z.infer<typeof ingestConfigSchema>;
