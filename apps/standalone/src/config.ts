import { z } from 'zod';
import { bool, commonConfigShape, port, secret } from '@th/config';

export const standaloneConfigSchema = z.object({
  ...commonConfigShape,
  PORT: port(1984),
  HOST: z.string().default('127.0.0.1'),
  DATA_DIR: z.string().default('./.data'),
  BOOTSTRAP_API_KEY: secret(z.string().min(8).optional()),
  /** Use this PostgreSQL instead of the embedded one. */
  DATABASE_URL: secret(z.string().url().optional()),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(25 * 1024 * 1024),
  INGEST_BATCH_SIZE_LIMIT: z.coerce.number().int().min(1).default(100),
  WRITER_MAX_BATCH: z.coerce.number().int().min(1).default(20_000),
  WRITER_CACHE_ENTRIES: z.coerce.number().int().min(0).default(100_000),
  PRINT_BANNER: bool(true),
});
export type StandaloneConfig = z.infer<typeof standaloneConfigSchema>;
