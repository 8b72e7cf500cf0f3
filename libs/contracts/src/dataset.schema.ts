import { z } from 'zod';
import { jsonObject, queryBool, timestamp, uuid } from './common.schema';

const queryArray = <T extends z.ZodTypeAny>(t: T) =>
  z.union([t, z.array(t)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.infer<T>[]);

export const DATASET_DATA_TYPES = ['kv', 'llm', 'chat'] as const;
export const datasetDataType = z.enum(DATASET_DATA_TYPES);
export type DatasetDataType = z.infer<typeof datasetDataType>;

/** A JSON Schema document (checked by the service with ajv when the dataset is created or updated). */
const jsonSchemaDefinition = jsonObject;

export const datasetCreateSchema = z.object({
  id: uuid.optional(),
  name: z.string().trim().min(1).max(1024),
  description: z.string().nullish(),
  data_type: datasetDataType.nullish(),
  inputs_schema_definition: jsonSchemaDefinition.nullish(),
  outputs_schema_definition: jsonSchemaDefinition.nullish(),
  externally_managed: z.boolean().nullish(),
  /** `{source:"sdk", metadata?}` from the SDK; `metadata` is filterable. */
  extra: jsonObject.nullish(),
  created_at: timestamp.nullish(),
});
export type DatasetCreate = z.infer<typeof datasetCreateSchema>;

/** The text fields of POST /datasets/upload (multipart; `input_keys`/`output_keys` repeated; the CSV is the `file` part). */
export const datasetCsvUploadSchema = z.object({
  /** Defaults to the file name without `.csv`. */
  name: z.string().trim().min(1).max(1024).optional(),
  description: z.string().optional(),
  data_type: datasetDataType.optional(),
  input_keys: z.array(z.string().min(1)).min(1),
  output_keys: z.array(z.string().min(1)).default([]),
});
export type DatasetCsvUpload = z.infer<typeof datasetCsvUploadSchema>;

/** Null or absent means "leave unchanged"; `metadata` replaces `extra.metadata`. */
export const datasetUpdateSchema = z.object({
  name: z.string().trim().min(1).max(1024).nullish(),
  description: z.string().nullish(),
  inputs_schema_definition: jsonSchemaDefinition.nullish(),
  outputs_schema_definition: jsonSchemaDefinition.nullish(),
  metadata: jsonObject.nullish(),
});
export type DatasetUpdate = z.infer<typeof datasetUpdateSchema>;

export const DATASET_SORT_KEYS = ['name', 'created_at', 'modified_at', 'last_session_start_time', 'example_count', 'session_count'] as const;

export const datasetListQuerySchema = z.object({
  id: queryArray(uuid).optional(),
  name: z.string().optional(),
  name_contains: z.string().optional(),
  data_type: queryArray(datasetDataType).optional(),
  /** JSON object matched (containment) against `extra.metadata`. */
  metadata: z.string().optional(),
  sort_by: z.enum(DATASET_SORT_KEYS).optional(),
  sort_by_desc: queryBool.optional(),
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
export type DatasetListQuery = z.infer<typeof datasetListQuerySchema>;

export const datasetIdParamSchema = z.object({ dataset_id: uuid });
export const datasetDeleteManyQuerySchema = z.object({ id: queryArray(uuid) });

export const datasetSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  created_at: z.string(),
  modified_at: z.string(),
  data_type: datasetDataType,
  inputs_schema_definition: jsonObject.nullable(),
  outputs_schema_definition: jsonObject.nullable(),
  externally_managed: z.boolean(),
  extra: jsonObject.nullable(),
  metadata: jsonObject.nullable(),
  example_count: z.number(),
  session_count: z.number(),
  last_session_start_time: z.string().nullable(),
  created_by_upload: z.boolean(),
});
export type Dataset = z.infer<typeof datasetSchema>;

/** One example to create. `split` is a split name or a list of them (default `base`). */
export const exampleCreateSchema = z.object({
  id: uuid.optional(),
  dataset_id: uuid.optional(),
  inputs: jsonObject,
  outputs: jsonObject.nullish(),
  metadata: jsonObject.nullish(),
  split: z.union([z.string().min(1), z.array(z.string().min(1))]).nullish(),
  source_run_id: uuid.nullish(),
  created_at: timestamp.nullish(),
});
export type ExampleCreate = z.infer<typeof exampleCreateSchema>;
export const exampleCreateWithDatasetSchema = exampleCreateSchema.extend({ dataset_id: uuid });
export const exampleCreateManySchema = z.array(exampleCreateWithDatasetSchema).min(1).max(10_000);

/**
 * On an update: `retain` names the attachments kept, `rename` ({old: new}) the ones kept under a new name; the
 * others are removed. Without attachments_operations every attachment is kept. New uploads are added (a new
 * upload replaces a kept attachment of the same name).
 */
export const exampleAttachmentsOperationsSchema = z.object({
  rename: z.record(z.string().min(1), z.string().min(1)).nullish(),
  retain: z.array(z.string().min(1)).nullish(),
});
export type ExampleAttachmentsOperations = z.infer<typeof exampleAttachmentsOperationsSchema>;

/** Fields absent or null are left unchanged; `split` replaces the example's splits. */
export const exampleUpdateSchema = z.object({
  dataset_id: uuid.nullish(),
  inputs: jsonObject.nullish(),
  outputs: jsonObject.nullish(),
  metadata: jsonObject.nullish(),
  split: z.union([z.string().min(1), z.array(z.string().min(1))]).nullish(),
  attachments_operations: exampleAttachmentsOperationsSchema.nullish(),
});
export type ExampleUpdate = z.infer<typeof exampleUpdateSchema>;
export const exampleUpdateWithIdSchema = exampleUpdateSchema.extend({ id: uuid });
export type ExampleUpdateWithId = z.infer<typeof exampleUpdateWithIdSchema>;
export const exampleUpdateManySchema = z.array(exampleUpdateWithIdSchema).min(1).max(10_000);

export const exampleIdParamSchema = z.object({ example_id: uuid });
export const attachmentDownloadParamSchema = z.object({ attachment_id: uuid });
export const attachmentDownloadQuerySchema = z.object({ expires: z.coerce.number().int(), signature: z.string().min(1).max(200) });
export const exampleDeleteManyQuerySchema = z.object({ example_ids: queryArray(uuid) });
export const exampleDeleteManyBodySchema = z.object({ example_ids: z.array(uuid).min(1), hard_delete: z.boolean().nullish() });

export const exampleListQuerySchema = z.object({
  dataset: uuid.optional(),
  id: queryArray(uuid).optional(),
  splits: queryArray(z.string().min(1)).optional(),
  /** JSON object matched (containment) against the example's metadata. */
  metadata: z.string().optional(),
  /** An ISO timestamp (the version current at that time), a version tag, or `latest`. */
  as_of: z.string().min(1).optional(),
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(10_000).default(100),
  order: z.enum(['recent', 'oldest']).optional(),
  inline_s3_urls: queryBool.optional(),
  /** LangSmith's filter language over the examples' metadata (eq, neq, gt, gte, lt, lte, has, exists, and, or, not). */
  filter: z.string().optional(),
});
export type ExampleListQuery = z.infer<typeof exampleListQuerySchema>;
export const exampleGetQuerySchema = z.object({ as_of: z.string().min(1).optional(), dataset: uuid.optional() });

export const exampleSchema = z.object({
  id: z.string(),
  dataset_id: z.string(),
  inputs: jsonObject,
  outputs: jsonObject.nullable(),
  metadata: jsonObject.nullable(),
  /** The example's splits (also shown as `metadata.dataset_split`, where the SDK reads them). */
  split: z.array(z.string()),
  source_run_id: z.string().nullable(),
  created_at: z.string(),
  modified_at: z.string(),
  /** `{"attachment.<name>": {presigned_url, mime_type}}`: signed, expiring download URLs (no API key needed). */
  attachment_urls: jsonObject.nullable(),
});
export type Example = z.infer<typeof exampleSchema>;

export const exampleBulkResultSchema = z.object({ example_ids: z.array(z.string()), count: z.number() });
export type ExampleBulkResult = z.infer<typeof exampleBulkResultSchema>;

export const datasetVersionSchema = z.object({ as_of: z.string(), tags: z.array(z.string()) });
export type DatasetVersion = z.infer<typeof datasetVersionSchema>;
export const datasetVersionQuerySchema = z.object({ as_of: z.string().min(1).optional(), tag: z.string().min(1).optional() });
export const datasetVersionsListQuerySchema = z.object({
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
export const datasetVersionsDiffQuerySchema = z.object({ from_version: z.string().min(1), to_version: z.string().min(1) });
export const datasetVersionsDiffSchema = z.object({
  examples_modified: z.array(z.string()),
  examples_added: z.array(z.string()),
  examples_removed: z.array(z.string()),
});
export type DatasetVersionsDiff = z.infer<typeof datasetVersionsDiffSchema>;
export const datasetTagUpdateSchema = z.object({ as_of: z.string().min(1), tag: z.string().trim().min(1).max(256) });

export const datasetSplitsQuerySchema = z.object({ as_of: z.string().min(1).optional() });
export const datasetSplitsUpdateSchema = z.object({
  split_name: z.string().trim().min(1).max(256),
  examples: z.array(uuid),
  remove: z.boolean().nullish(),
});
export type DatasetSplitsUpdate = z.infer<typeof datasetSplitsUpdateSchema>;
/** The SDK's bulk metadata form: PATCH /v1/platform/datasets/{id}/examples/metadata. */
export const exampleMetadataPatchSchema = z.object({
  example_ids: z.array(uuid).min(1),
  operations: z
    .array(
      z.object({
        key: z.literal('dataset_split'),
        operation: z.enum(['array_add', 'array_remove', 'ARRAY_ADD', 'ARRAY_REMOVE']),
        values: z.array(z.string().trim().min(1)).min(1),
      }),
    )
    .min(1),
});

export const datasetCloneSchema = z.object({
  source_dataset_id: uuid,
  target_dataset_id: uuid,
  as_of: z.string().min(1).nullish(),
  examples: z.array(uuid).nullish(),
  split: z.union([z.string().min(1), z.array(z.string().min(1))]).nullish(),
});
export type DatasetClone = z.infer<typeof datasetCloneSchema>;

export const datasetShareSchema = z.object({ dataset_id: z.string(), share_token: z.string() });
export type DatasetShare = z.infer<typeof datasetShareSchema>;
export const shareTokenParamSchema = z.object({ share_token: uuid });
