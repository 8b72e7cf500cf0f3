import { z } from 'zod';
import { timestamp, toEpochMicros, uuid } from './common.schema';
import { RUN_EXPORT_FIELDS, type RunExportField } from './run-table.schema';

/** export_fields names; id is always written (it keys resumption). */
export const EXPORT_FIELDS = RUN_EXPORT_FIELDS;
export type ExportField = RunExportField;

export const EXPORT_STATUSES = ['CREATED', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMEDOUT'] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];
export const TERMINAL_EXPORT_STATUSES: readonly ExportStatus[] = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEDOUT'];

/** `objstore` is the spec's neutral name; `s3` is the published value. Both mean an S3-compatible store. */
export const DESTINATION_TYPES = ['objstore', 's3'] as const;

const nonEmpty = z.string().trim().min(1);

/**
 * An object store's URL. Credentials inside it (https://user:pass@host) are refused: they would be
 * stored and answered in clear; they belong in the credentials fields, which are encrypted and never answered.
 */
const withoutUserinfo = (u: string): boolean => !URL.canParse(u) || (new URL(u).username === '' && new URL(u).password === '');
const endpointUrl = z.string().url().max(2048).refine(withoutUserinfo, {
  message: 'endpoint_url must not carry credentials (user:password@): send them as credentials.access_key_id and credentials.secret_access_key',
});

export const exportDestinationConfigSchema = z.strictObject({
  bucket_name: z
    .string()
    .min(3)
    .max(63)
    .regex(/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/, 'Bucket names are 3-63 characters of lowercase letters, digits, dots and hyphens'),
  prefix: z
    .string()
    .max(512)
    .default('')
    .transform((p) => p.replace(/^\/+|\/+$/g, '')),
  region: z.string().max(64).nullish(),
  endpoint_url: endpointUrl.nullish(),
});
export type ExportDestinationConfig = z.infer<typeof exportDestinationConfigSchema>;

export const exportDestinationCredentialsSchema = z.strictObject({
  access_key_id: nonEmpty.max(256),
  secret_access_key: nonEmpty.max(1024),
  session_token: z.string().max(4096).nullish(),
});
export type ExportDestinationCredentials = z.infer<typeof exportDestinationCredentialsSchema>;

export const exportDestinationCreateSchema = z.strictObject({
  destination_type: z.enum(DESTINATION_TYPES).default('objstore'),
  display_name: nonEmpty.max(256),
  config: exportDestinationConfigSchema,
  credentials: exportDestinationCredentialsSchema,
});
export type ExportDestinationCreate = z.infer<typeof exportDestinationCreateSchema>;

/** Omitted fields stay; config fields given replace the stored ones. A change of config or credentials is validated again. */
export const exportDestinationUpdateSchema = z.strictObject({
  display_name: nonEmpty.max(256).optional(),
  config: z
    .strictObject({
      bucket_name: exportDestinationConfigSchema.shape.bucket_name.optional(),
      prefix: z
        .string()
        .max(512)
        .transform((p) => p.replace(/^\/+|\/+$/g, ''))
        .optional(),
      region: z.string().max(64).nullish(),
      endpoint_url: endpointUrl.nullish(),
    })
    .optional(),
  credentials: exportDestinationCredentialsSchema.optional(),
});
export type ExportDestinationUpdate = z.infer<typeof exportDestinationUpdateSchema>;

/** A destination as answered: credentials are never returned, only which keys are stored. */
export const exportDestinationSchema = z.object({
  id: uuid,
  tenant_id: uuid,
  destination_type: z.enum(DESTINATION_TYPES),
  display_name: z.string(),
  config: z.object({ bucket_name: z.string(), prefix: z.string(), region: z.string().nullable(), endpoint_url: z.string().nullable() }),
  credentials_keys: z.array(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ExportDestination = z.infer<typeof exportDestinationSchema>;

export const bulkExportCreateSchema = z
  .strictObject({
    bulk_export_destination_id: uuid,
    session_id: uuid,
    start_time: timestamp,
    end_time: timestamp.nullish(),
    interval_hours: z.number().int().min(1).max(168).nullish(),
    filter: z.string().max(10000).nullish(),
    export_fields: z.array(z.enum(EXPORT_FIELDS)).min(1).max(EXPORT_FIELDS.length).nullish(),
    format_version: z.literal('v2_beta').default('v2_beta'),
  })
  .superRefine((v, ctx) => {
    const scheduled = v.interval_hours !== null && v.interval_hours !== undefined;
    const hasEnd = v.end_time !== null && v.end_time !== undefined;
    if (scheduled && hasEnd) ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'end_time must be omitted for a scheduled export (interval_hours is set)' });
    if (!scheduled && !hasEnd) ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'end_time is required for a one-time export' });
    if (hasEnd && (toEpochMicros(v.end_time as string) ?? 0) <= (toEpochMicros(v.start_time) ?? 0)) {
      ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'end_time must be after start_time' });
    }
  });
export type BulkExportCreate = z.infer<typeof bulkExportCreateSchema>;

/** Cancel: `{"status": "CANCELLED"}` (the published client's `Cancelled` is accepted too). */
export const bulkExportUpdateSchema = z.strictObject({
  status: z
    .string()
    .transform((s) => s.toUpperCase())
    .pipe(z.literal('CANCELLED')),
});

export const bulkExportSchema = z.object({
  id: uuid,
  tenant_id: uuid,
  bulk_export_destination_id: uuid,
  session_id: uuid,
  start_time: z.string(),
  end_time: z.string().nullable(),
  interval_hours: z.number().int().nullable(),
  filter: z.string().nullable(),
  export_fields: z.array(z.enum(EXPORT_FIELDS)).nullable(),
  format_version: z.string(),
  status: z.enum(EXPORT_STATUSES),
  source_bulk_export_id: uuid.nullable(),
  rows_written: z.number().int(),
  files_written: z.number().int(),
  error: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});
export type BulkExport = z.infer<typeof bulkExportSchema>;

export const bulkExportIdParamSchema = z.object({ export_id: uuid });
export const exportDestinationIdParamSchema = z.object({ destination_id: uuid });

export const bulkExportListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  offset: z.coerce.number().int().min(0).default(0),
});

/** Bus message on topic `exports`: an export is ready to be taken by a worker. */
export const exportJobEventSchema = z.object({
  kind: z.literal('export.ready'),
  export_id: uuid,
  tenant_id: uuid,
});
export type ExportJobEvent = z.infer<typeof exportJobEventSchema>;
