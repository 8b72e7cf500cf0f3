import { z } from 'zod';

export const infoSchema = z.object({
  version: z.string(),
  license_expiration_time: z.string().nullable(),
  batch_ingest_config: z.object({
    use_multipart_endpoint: z.boolean(),
    scale_up_qsize_trigger: z.number(),
    scale_up_nthreads_limit: z.number(),
    scale_down_nempty_trigger: z.number(),
    size_limit: z.number(),
    size_limit_bytes: z.number(),
  }),
  instance_flags: z.record(z.string(), z.union([z.boolean(), z.string(), z.number()])),
  features: z.record(z.string(), z.boolean()),
});
export type Info = z.infer<typeof infoSchema>;

export const healthSchema = z.object({ status: z.enum(['ok', 'error']), checks: z.record(z.string(), z.string()).optional() });
