import { z } from 'zod';

/** Prompt hub: repositories (prompts), their commits and commit tags, likes, and the workspace's hub handle. */

const queryBool = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0'])])
  .transform((v) => v === true || v === 'true' || v === '1');
const queryArray = <T extends z.ZodTypeAny>(t: T) =>
  z.union([t, z.array(t)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.infer<T>[]);

/** A repo's name, as the clients put it in paths (`owner/name:ref`): no slash, colon or whitespace. */
export const promptRepoHandle = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'must start with a letter or digit and hold only letters, digits, "_", "-" and "."');
/** A workspace's hub handle; `-` (own workspace) is not one. */
export const tenantHandle = z
  .string()
  .min(3)
  .max(40)
  .regex(/^[a-z0-9][a-z0-9_-]*$/, 'must hold only lower-case letters, digits, "_" and "-", starting with a letter or digit');
/** `-` or a workspace's handle. */
export const promptOwner = z.union([z.literal('-'), tenantHandle]);
const tagName = z.string().min(1).max(128).regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'must hold only letters, digits, "_", "-" and "."');
/** A commit reference in a path: `latest`, a tag, or a commit hash (8 to 64 hex digits, a prefix is enough). */
const commitRef = z.string().min(1).max(128).regex(/^[A-Za-z0-9_.-]+$/, 'must be latest, a tag or a commit hash');
const repoTags = z.array(z.string().min(1).max(128)).max(50);

/** A hub repo holds a prompt (commits of LangChain manifests) or a directory of files (an agent or a skill). */
export const HUB_REPO_TYPES = ['prompt', 'agent', 'skill'] as const;
export const hubRepoType = z.enum(HUB_REPO_TYPES);
export type HubRepoType = z.infer<typeof hubRepoType>;

export const PROMPT_SORT_FIELDS = ['num_downloads', 'num_views', 'updated_at', 'num_likes'] as const;

export const promptRepoParamSchema = z.object({ owner: promptOwner, repo: promptRepoHandle });
export const promptCommitParamSchema = promptRepoParamSchema.extend({ ref: commitRef });
export const promptTagParamSchema = promptRepoParamSchema.extend({ tag_name: tagName });

export const promptRepoListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  is_public: queryBool.optional(),
  is_archived: queryBool.optional(),
  sort_field: z.enum(PROMPT_SORT_FIELDS).default('updated_at'),
  sort_direction: z.enum(['asc', 'desc']).default('desc'),
  query: z.string().max(256).optional(),
  match_prefix: queryBool.optional(),
  tags: queryArray(z.string().min(1).max(128)).optional(),
  repo_type: hubRepoType.default('prompt'),
  /** Only this workspace's prompts: its own (every one) or another's (the public ones); `-` is the caller's. */
  tenant_handle: promptOwner.optional(),
});
export type PromptRepoListQuery = z.infer<typeof promptRepoListQuerySchema>;

export const promptRepoCreateSchema = z.object({
  repo_handle: promptRepoHandle,
  description: z.string().max(10_000).nullish(),
  readme: z.string().max(100_000).nullish(),
  tags: repoTags.nullish(),
  is_public: z.boolean().default(false),
  repo_type: hubRepoType.default('prompt'),
});
export type PromptRepoCreate = z.infer<typeof promptRepoCreateSchema>;

export const promptRepoUpdateSchema = z
  .object({
    description: z.string().max(10_000).nullish(),
    readme: z.string().max(100_000).nullish(),
    tags: repoTags.nullish(),
    is_public: z.boolean().optional(),
    is_archived: z.boolean().optional(),
  })
  .strict();
export type PromptRepoUpdate = z.infer<typeof promptRepoUpdateSchema>;

/** A serialized LangChain object (`{lc, type, id, kwargs}`); its `id` is checked by the service (400, as the hub answers). */
export const promptManifest = z.record(z.string(), z.unknown());

export const promptCommitCreateSchema = z.object({
  manifest: promptManifest,
  parent_commit: z.string().regex(/^[0-9a-f]{8,64}$/, 'must be a commit hash').nullish(),
  description: z.string().max(10_000).nullish(),
  /** The clients send examples only from the web app; kept empty here. */
  examples: z.array(z.unknown()).max(0).optional(),
});
export type PromptCommitCreate = z.infer<typeof promptCommitCreateSchema>;

export const promptCommitListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  include_model: queryBool.optional(),
});
export const promptCommitGetQuerySchema = z.object({ include_model: queryBool.optional() });

export const promptTagCreateSchema = z.object({ tag_name: tagName, commit_id: z.uuid() });
export const promptTagUpdateSchema = z.object({ commit_id: z.uuid() });
export const promptLikeSchema = z.object({ like: z.boolean() });
export const tenantHandleSetSchema = z.object({ tenant_handle: tenantHandle });

const isoTime = z.string();

export const promptRepoSchema = z.object({
  id: z.string(),
  repo_handle: z.string(),
  full_name: z.string(),
  owner: z.string().nullable(),
  tenant_id: z.string(),
  description: z.string().nullable(),
  readme: z.string().nullable(),
  tags: z.array(z.string()),
  is_public: z.boolean(),
  is_archived: z.boolean(),
  created_at: isoTime,
  updated_at: isoTime,
  num_likes: z.number().int(),
  num_downloads: z.number().int(),
  num_views: z.number().int(),
  num_commits: z.number().int(),
  last_commit_hash: z.string().nullable(),
  liked_by_auth_user: z.boolean(),
  original_repo_id: z.null(),
  upstream_repo_id: z.null(),
  original_repo_full_name: z.null(),
  upstream_repo_full_name: z.null(),
  repo_type: hubRepoType,
});
export type PromptRepo = z.infer<typeof promptRepoSchema>;
export const promptRepoResponseSchema = z.object({ repo: promptRepoSchema });
export const promptRepoListSchema = z.object({ repos: z.array(promptRepoSchema), total: z.number().int() });

export const promptCommitListedSchema = z.object({
  id: z.string(),
  owner: z.string(),
  repo: z.string(),
  repo_id: z.string(),
  parent_id: z.string().nullable(),
  parent_commit_hash: z.string().nullable(),
  commit_hash: z.string(),
  manifest: promptManifest,
  description: z.string().nullable(),
  examples: z.array(z.unknown()),
  num_downloads: z.number().int(),
  num_views: z.number().int(),
  created_at: isoTime,
});
export type PromptCommitListed = z.infer<typeof promptCommitListedSchema>;
export const promptCommitResponseSchema = z.object({ commit: promptCommitListedSchema });
export const promptCommitListSchema = z.object({ commits: z.array(promptCommitListedSchema), total: z.number().int() });

export const promptCommitPulledSchema = z.object({
  owner: z.string(),
  repo: z.string(),
  commit_hash: z.string(),
  manifest: promptManifest,
  examples: z.array(z.unknown()),
  description: z.string().nullable(),
  /** With include_model, for a prompt with a model attached: the model's serialized kwargs and its class name. */
  model_config: z.record(z.string(), z.unknown()).nullable(),
  model_provider: z.string().nullable(),
});
export type PromptCommitPulled = z.infer<typeof promptCommitPulledSchema>;

export const promptCommitTagSchema = z.object({
  id: z.string(),
  repo_id: z.string(),
  tag_name: z.string(),
  commit_id: z.string(),
  commit_hash: z.string(),
  created_at: isoTime,
  updated_at: isoTime,
});
export type PromptCommitTag = z.infer<typeof promptCommitTagSchema>;
export const promptLikeResponseSchema = z.object({ likes: z.number().int() });

export const hubSettingsSchema = z.object({
  id: z.string(),
  display_name: z.string(),
  tenant_handle: z.string().nullable(),
  created_at: isoTime,
});
export type HubSettings = z.infer<typeof hubSettingsSchema>;

/** Prompt webhooks: called when a commit lands on (or a tag is put on) a prompt they cover. */
export const PROMPT_WEBHOOK_TRIGGERS = ['commit', 'tag:create', 'tag:update'] as const;
export type PromptWebhookTrigger = (typeof PROMPT_WEBHOOK_TRIGGERS)[number];
const webhookTriggers = z.array(z.enum(PROMPT_WEBHOOK_TRIGGERS)).min(1).max(3);
const promptNames = z.array(promptRepoHandle).max(100);
/** Extra request headers (e.g. the receiver's token); stored encrypted. Names the delivery sets itself are refused. */
const webhookHeaders = z
  .record(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'must be an HTTP header name'), z.string().max(4096).regex(/^[\t\x20-\x7e\x80-\xff]*$/, 'must be an HTTP header value'))
  .refine((h) => Object.keys(h).length <= 20, 'at most 20 headers')
  .refine((h) => !Object.keys(h).some((k) => RESERVED_WEBHOOK_HEADERS.has(k.toLowerCase())), 'must not set host, content-type, content-length, connection, transfer-encoding or the signature headers');
export const RESERVED_WEBHOOK_HEADERS = new Set(['host', 'content-type', 'content-length', 'connection', 'transfer-encoding', 'x-tracehouse-signature', 'x-tracehouse-event']);
const webhookUrl = z.string().max(2048).url();

export const promptWebhookCreateSchema = z.object({
  url: webhookUrl,
  id: z.uuid().nullish(),
  include_prompts: promptNames.nullish(),
  exclude_prompts: promptNames.nullish(),
  headers: webhookHeaders.nullish(),
  triggers: webhookTriggers.default(['commit']),
});
export type PromptWebhookCreate = z.infer<typeof promptWebhookCreateSchema>;
export const promptWebhookUpdateSchema = z
  .object({
    url: webhookUrl.nullish(),
    include_prompts: promptNames.nullish(),
    exclude_prompts: promptNames.nullish(),
    headers: webhookHeaders.nullish(),
    triggers: webhookTriggers.nullish(),
  })
  .strict();
export type PromptWebhookUpdate = z.infer<typeof promptWebhookUpdateSchema>;
export const promptWebhookIdParamSchema = z.object({ webhook_id: z.uuid() });

/** What a delivery posts. */
export const promptWebhookPayloadSchema = z.object({
  event: z.enum(PROMPT_WEBHOOK_TRIGGERS),
  prompt_id: z.string().max(128),
  prompt_name: z.string().max(128),
  commit_hash: z.string().max(128),
  created_at: z.string().max(64),
  created_by: z.string().max(256),
  manifest: promptManifest,
  tag_name: z.string().max(128).nullish(),
});
export type PromptWebhookPayload = z.infer<typeof promptWebhookPayloadSchema>;
export const promptWebhookTestSchema = z.object({
  webhook: promptWebhookCreateSchema.omit({ id: true }),
  payload: promptWebhookPayloadSchema,
});

export const promptWebhookSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  url: z.string(),
  include_prompts: z.array(z.string()).nullable(),
  exclude_prompts: z.array(z.string()).nullable(),
  /** Header names only: values are secrets. */
  headers: z.record(z.string(), z.string()).nullable(),
  triggers: z.array(z.enum(PROMPT_WEBHOOK_TRIGGERS)),
  created_at: isoTime,
  updated_at: isoTime,
});
export type PromptWebhook = z.infer<typeof promptWebhookSchema>;
/** A delivery of a prompt webhook, as the outbox records it (kept 7 days after it ends). */
export const PROMPT_WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'cancelled'] as const;
export const promptWebhookDeliverySchema = z.object({
  id: z.string(),
  webhook_id: z.string(),
  event: z.enum(PROMPT_WEBHOOK_TRIGGERS),
  status: z.enum(PROMPT_WEBHOOK_DELIVERY_STATUSES),
  /** Tries so far. */
  attempts: z.number().int(),
  /** The receiver's answer to the last try; null when it did not answer (network error, refused address). */
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  created_at: isoTime,
  /** When a pending delivery is tried next. */
  next_attempt_at: isoTime.nullable(),
  finished_at: isoTime.nullable(),
});
export type PromptWebhookDelivery = z.infer<typeof promptWebhookDeliverySchema>;
export const promptWebhookDeliveryListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  status: z.enum(PROMPT_WEBHOOK_DELIVERY_STATUSES).optional(),
});
export type PromptWebhookDeliveryListQuery = z.infer<typeof promptWebhookDeliveryListQuerySchema>;
export const promptWebhookDeliveryListSchema = z.object({ deliveries: z.array(promptWebhookDeliverySchema), total: z.number().int() });

/** Creation is the one answer that carries the signing secret. */
export const promptWebhookCreatedSchema = promptWebhookSchema.extend({ secret: z.string() });
export const promptWebhookTestResultSchema = z.record(z.string(), z.string());

/** An entry of an agent's or skill's directory: a file, or a link to another agent or skill repo. */
export const hubDirectoryEntrySchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('file'), content: z.string().max(1_000_000) }),
  z.object({ type: z.enum(['agent', 'skill']), repo_handle: promptRepoHandle, owner: promptOwner.nullish(), commit_id: z.uuid().nullish(), commit_hash: z.string().regex(/^[0-9a-f]{8,64}$/).nullish() }),
]);
export type HubDirectoryEntry = z.infer<typeof hubDirectoryEntrySchema>;
const directoryPath = z.string().min(1).max(512).regex(/^(?!\/)(?!.*(?:^|\/)\.\.?(?:\/|$))[^\0\\]+$/, 'must be a relative path without . or .. segments');
/** A directory commit: entries to add or replace, null to delete; entries left out are kept from the parent. */
export const hubDirectoryCommitSchema = z.object({
  files: z.record(directoryPath, hubDirectoryEntrySchema.nullable()).refine((f) => Object.keys(f).length <= 1000, 'at most 1000 entries per commit'),
  parent_commit: z.string().regex(/^[0-9a-f]{8,64}$/, 'must be a commit hash').nullish(),
  description: z.string().max(10_000).nullish(),
});
export type HubDirectoryCommit = z.infer<typeof hubDirectoryCommitSchema>;
export const hubDirectoryQuerySchema = z.object({ commit: z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/).optional(), repo_type: z.enum(['agent', 'skill']).optional() });
export const hubDirectorySchema = z.object({ commit_id: z.string(), commit_hash: z.string(), files: z.record(z.string(), hubDirectoryEntrySchema) });
export type HubDirectory = z.infer<typeof hubDirectorySchema>;
