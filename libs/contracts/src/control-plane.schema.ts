import { z } from 'zod';
import { uuid } from './common.schema';

/** The deployment control plane ({control_plane_url}): deployments, revisions, listeners, integrations, uploads. */

/** Where issued upload URLs live (PUT {UPLOADS_PATH}/{object_path}); their bodies are bytes, whatever their Content-Type. */
export const UPLOADS_PATH = '/v2/uploads';

export const DEPLOYMENT_SOURCES = ['git_host', 'external_docker', 'internal_docker', 'internal_source'] as const;
export const deploymentSourceSchema = z.enum(DEPLOYMENT_SOURCES);
export type DeploymentSource = z.infer<typeof deploymentSourceSchema>;

export const DEPLOYMENT_STATUSES = ['AWAITING_DATABASE', 'READY', 'UNUSED', 'AWAITING_DELETE', 'UNKNOWN'] as const;
export const deploymentStatusSchema = z.enum(DEPLOYMENT_STATUSES);
export type DeploymentStatus = z.infer<typeof deploymentStatusSchema>;

/**
 * Revision lifecycle (the spec names only DEPLOYED): QUEUED → BUILDING → DEPLOYING → DEPLOYED;
 * BUILD_FAILED and DEPLOY_FAILED end a failed rollout; SUPERSEDED ends an unfinished revision a newer one
 * replaced before it deployed; REPLACED ends a DEPLOYED revision once a newer one is DEPLOYED.
 */
export const REVISION_STATUSES = ['QUEUED', 'BUILDING', 'DEPLOYING', 'DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SUPERSEDED', 'REPLACED'] as const;
export const revisionStatusSchema = z.enum(REVISION_STATUSES);
export type RevisionStatus = z.infer<typeof revisionStatusSchema>;
/** The statuses a revision does not leave on its own (a rollout waiting for one stops there; DEPLOYED becomes REPLACED only when a newer one deploys). */
export const TERMINAL_REVISION_STATUSES: readonly RevisionStatus[] = ['DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SUPERSEDED', 'REPLACED'];

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const secretSchema = z.strictObject({
  name: z.string().regex(ENV_NAME, 'Secret names are environment variable names ([A-Za-z_][A-Za-z0-9_]*)'),
  value: z.string(),
});
export type Secret = z.infer<typeof secretSchema>;

export const secretReferenceSchema = z.strictObject({
  name: z.string().regex(ENV_NAME, 'Must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)'),
  secret_name: z.string().min(1),
  secret_key: z.string().min(1),
});
export type SecretReference = z.infer<typeof secretReferenceSchema>;

const round1 = (v: number) => Math.round(v * 10) / 10;
/** CPU in cores: rounded to one decimal place, then bounded. */
const cpu = (max: number) =>
  z
    .number()
    .transform(round1)
    .pipe(z.number().min(0.1, 'CPU must be at least 0.1 cores (after rounding to 1 decimal)').max(max, `CPU must be at most ${max} cores`))
    .nullable()
    .optional();
const count = () => z.number().int().min(0).nullable().optional();
const mb = () => z.number().int().min(1).nullable().optional();
const stringMap = () => z.record(z.string(), z.string()).nullable().optional();
/** Structure of Volume, VolumeMount and Container entries is not shown: Kubernetes objects, passed through. */
const k8sObject = z.record(z.string(), z.unknown());
const namedK8sObject = k8sObject.refine((o) => typeof o.name === 'string' && o.name.length > 0, 'Must have a name');

export const FORBIDDEN_RESOURCE_FIELDS = [
  'orchestrator_cpu', 'orchestrator_cpu_limit', 'orchestrator_memory_mb', 'orchestrator_memory_limit_mb',
  'orchestrator_min_scale', 'orchestrator_max_scale',
  'executor_cpu', 'executor_cpu_limit', 'executor_memory_mb', 'executor_memory_limit_mb',
] as const;

const resourceSpecShape = {
  min_scale: count(),
  max_scale: count(),
  cpu: cpu(8),
  cpu_limit: cpu(16),
  memory_mb: mb(),
  memory_limit_mb: mb(),
  queue_min_scale: count(),
  queue_max_scale: count(),
  queue_cpu: cpu(8),
  queue_cpu_limit: cpu(16),
  queue_memory_mb: mb(),
  queue_memory_limit_mb: mb(),
  cache_cpu: cpu(8),
  cache_cpu_limit: cpu(16),
  cache_memory_mb: mb(),
  cache_memory_limit_mb: mb(),
  labels: stringMap(),
  annotations: stringMap(),
  service_account_name: z.string().min(1).nullable().optional(),
  image_pull_secrets: z.array(z.strictObject({ name: z.string().min(1) })).nullable().optional(),
  volumes: z.array(namedK8sObject).nullable().optional(),
  volume_mounts: z.array(namedK8sObject).nullable().optional(),
  init_containers: z.array(namedK8sObject).nullable().optional(),
  sidecars: z.array(namedK8sObject).nullable().optional(),
  db_cpu: z.number().transform(round1).pipe(z.number().min(0.1, 'CPU must be at least 0.1 cores')).nullable().optional(),
  db_cpu_limit: z.number().transform(round1).pipe(z.number().min(0.1, 'CPU must be at least 0.1 cores')).nullable().optional(),
  db_memory_mb: mb(),
  db_memory_limit_mb: mb(),
  db_storage_gi: z.number().int().min(1).nullable().optional(),
  db_max_connections: z.number().int().min(1).nullable().optional(),
  ...Object.fromEntries(
    FORBIDDEN_RESOURCE_FIELDS.map((f) => [f, z.never({ error: `${f} is not to be used` }).optional()]),
  ),
};

/** ResourceSpec as a client sends it (all optional and nullable). Unknown fields are refused. */
export const resourceSpecInputSchema = z
  .strictObject(resourceSpecShape)
  .superRefine((s, ctx) => {
    const pairs: [string, string][] = [['min_scale', 'max_scale'], ['queue_min_scale', 'queue_max_scale']];
    for (const [lo, hi] of pairs) {
      const a = (s as Record<string, unknown>)[lo];
      const b = (s as Record<string, unknown>)[hi];
      if (typeof a === 'number' && typeof b === 'number' && a > b) ctx.addIssue({ code: 'custom', path: [lo], message: `${lo} must not exceed ${hi}` });
    }
  });
export type ResourceSpecInput = z.infer<typeof resourceSpecInputSchema>;

/** ResourceSpec with every default applied (what a revision stores and the drivers read). */
export const resourceSpecSchema = z.object({
  min_scale: z.number().int(),
  max_scale: z.number().int(),
  cpu: z.number(),
  cpu_limit: z.number(),
  memory_mb: z.number().int(),
  memory_limit_mb: z.number().int(),
  queue_min_scale: z.number().int(),
  queue_max_scale: z.number().int(),
  queue_cpu: z.number(),
  queue_cpu_limit: z.number(),
  queue_memory_mb: z.number().int(),
  queue_memory_limit_mb: z.number().int(),
  cache_cpu: z.number(),
  cache_cpu_limit: z.number(),
  cache_memory_mb: z.number().int(),
  cache_memory_limit_mb: z.number().int(),
  labels: z.record(z.string(), z.string()),
  annotations: z.record(z.string(), z.string()),
  service_account_name: z.string().nullable(),
  image_pull_secrets: z.array(z.object({ name: z.string() })),
  volumes: z.array(k8sObject),
  volume_mounts: z.array(k8sObject),
  init_containers: z.array(k8sObject),
  sidecars: z.array(k8sObject),
  db_cpu: z.number(),
  db_cpu_limit: z.number(),
  db_memory_mb: z.number().int(),
  db_memory_limit_mb: z.number().int(),
  db_storage_gi: z.number().int(),
  db_max_connections: z.number().int(),
});
export type ResourceSpec = z.infer<typeof resourceSpecSchema>;

export const listenerConfigSchema = z.strictObject({
  k8s_namespace: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'Must be a Kubernetes namespace name (RFC 1123 label)')
    .max(63)
    .nullable()
    .optional(),
});
export type ListenerConfig = z.infer<typeof listenerConfigSchema>;

export const DEPLOYMENT_TYPES = ['dev_free', 'dev', 'prod'] as const;

/** SourceConfig in a request: every field nullable; validated against `source` by the service. */
export const sourceConfigRequestSchema = z.strictObject({
  integration_id: uuid.nullable().optional(),
  repo_url: z.string().min(1).nullable().optional(),
  deployment_type: z.enum(DEPLOYMENT_TYPES).nullable().optional(),
  build_on_push: z.boolean().nullable().optional(),
  custom_url: z.string().url().nullable().optional(),
  resource_spec: resourceSpecInputSchema.nullable().optional(),
  listener_id: uuid.nullable().optional(),
  listener_config: listenerConfigSchema.nullable().optional(),
  install_command: z.string().min(1).nullable().optional(),
  build_command: z.string().min(1).nullable().optional(),
});
export type SourceConfigRequest = z.infer<typeof sourceConfigRequestSchema>;

export const sourceConfigSchema = z.object({
  integration_id: z.string().nullable(),
  repo_url: z.string().nullable(),
  deployment_type: z.enum(DEPLOYMENT_TYPES).nullable(),
  build_on_push: z.boolean().nullable(),
  custom_url: z.string().nullable(),
  resource_spec: resourceSpecSchema.nullable(),
  listener_id: z.string().nullable(),
  listener_config: z.object({ k8s_namespace: z.string().nullable() }).nullable(),
  install_command: z.string().nullable(),
  build_command: z.string().nullable(),
});
export type SourceConfig = z.infer<typeof sourceConfigSchema>;

/** The graph configuration path: relative, inside the source tree. */
const relativePath = z
  .string()
  .min(1)
  .refine((p) => !p.startsWith('/') && !p.split(/[\\/]/).includes('..'), 'Must be a relative path inside the source tree');

export const sourceRevisionConfigRequestSchema = z.strictObject({
  repo_ref: z.string().min(1).nullable().optional(),
  langgraph_config_path: relativePath.nullable().optional(),
  image_uri: z.string().min(1).nullable().optional(),
  source_tarball_path: z.string().min(1).nullable().optional(),
});
export type SourceRevisionConfigRequest = z.infer<typeof sourceRevisionConfigRequestSchema>;

export const sourceRevisionConfigSchema = z.object({
  repo_ref: z.string().nullable(),
  langgraph_config_path: z.string().nullable(),
  image_uri: z.string().nullable(),
  source_tarball_path: z.string().nullable(),
  repo_commit_sha: z.string().nullable(),
});
export type SourceRevisionConfig = z.infer<typeof sourceRevisionConfigSchema>;

export const deploymentCreateRequestSchema = z.strictObject({
  name: z
    .string()
    .min(1)
    .max(128)
    .regex(/^[A-Za-z0-9][A-Za-z0-9 ._-]*$/, 'Letters, digits, space, dot, dash and underscore, starting with a letter or digit'),
  source: deploymentSourceSchema,
  source_config: sourceConfigRequestSchema,
  source_revision_config: sourceRevisionConfigRequestSchema,
  secrets: z.array(secretSchema),
  secret_references: z.array(secretReferenceSchema).nullable().optional(),
  image_version: z.string().min(1).nullable().optional(),
});
export type DeploymentCreateRequest = z.infer<typeof deploymentCreateRequestSchema>;

/** PATCH: every field optional; immutable fields are refused by the service when they would change. */
export const deploymentPatchRequestSchema = z.strictObject({
  name: z.string().nullable().optional(),
  source: deploymentSourceSchema.nullable().optional(),
  source_config: sourceConfigRequestSchema.nullable().optional(),
  source_revision_config: sourceRevisionConfigRequestSchema.nullable().optional(),
  secrets: z.array(secretSchema).nullable().optional(),
  secret_references: z.array(secretReferenceSchema).nullable().optional(),
  image_version: z.string().min(1).nullable().optional(),
});
export type DeploymentPatchRequest = z.infer<typeof deploymentPatchRequestSchema>;

/** Secrets in a response: the name only, the value is never returned in clear. */
export const SECRET_MASK = '********';
export const secretResponseSchema = z.object({ name: z.string(), value: z.literal(SECRET_MASK) });

export const deploymentSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  name: z.string(),
  source: deploymentSourceSchema,
  source_config: sourceConfigSchema,
  source_revision_config: sourceRevisionConfigSchema,
  secrets: z.array(secretResponseSchema),
  secret_references: z.array(secretReferenceSchema).nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  status: deploymentStatusSchema,
  latest_revision_id: z.string().nullable(),
  active_revision_id: z.string().nullable(),
  image_version: z.string().nullable(),
});
export type Deployment = z.infer<typeof deploymentSchema>;

export const revisionTransitionSchema = z.object({ status: revisionStatusSchema, at: z.string(), message: z.string() });
export type RevisionTransition = z.infer<typeof revisionTransitionSchema>;

export const revisionSchema = z.object({
  id: z.string(),
  deployment_id: z.string(),
  status: revisionStatusSchema,
  status_message: z.string(),
  source_revision_config: sourceRevisionConfigSchema,
  resource_spec: resourceSpecSchema.nullable(),
  /** Every transition with its time and message, oldest first. */
  status_history: z.array(revisionTransitionSchema),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Revision = z.infer<typeof revisionSchema>;

const pageLimit = z.coerce.number().int().min(1).max(100).default(20);
const pageOffset = z.coerce.number().int().min(0).default(0);

export const deploymentListQuerySchema = z.strictObject({
  name: z.string().min(1).optional(),
  name_contains: z.string().min(1).optional(),
  status: deploymentStatusSchema.optional(),
  limit: pageLimit,
  offset: pageOffset,
});
export const deploymentListResponseSchema = z.object({ resources: z.array(deploymentSchema), offset: z.number(), limit: z.number(), total: z.number() });
export type DeploymentList = z.infer<typeof deploymentListResponseSchema>;

export const revisionListQuerySchema = z.strictObject({ status: revisionStatusSchema.optional(), limit: pageLimit, offset: pageOffset });
export const revisionListResponseSchema = z.object({ resources: z.array(revisionSchema), offset: z.number(), limit: z.number(), total: z.number() });
export type RevisionList = z.infer<typeof revisionListResponseSchema>;

export const deploymentIdParamSchema = z.strictObject({ deployment_id: uuid });
export const revisionIdParamSchema = z.strictObject({ deployment_id: uuid, revision_id: uuid });

/** Listener record (fields not shown in the spec): a compute target that rolls out external_docker deployments. */
export const LISTENER_COMPUTE_TYPES = ['k8s'] as const;
export const listenerCreateRequestSchema = z.strictObject({
  name: z.string().min(1).max(128),
  compute_type: z.enum(LISTENER_COMPUTE_TYPES),
  /** Namespaces the listener may deploy into; the first is the default. */
  k8s_namespaces: z.array(listenerConfigSchema.shape.k8s_namespace.unwrap().unwrap()).min(1),
});
export const listenerSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  name: z.string(),
  compute_type: z.enum(LISTENER_COMPUTE_TYPES),
  k8s_namespaces: z.array(z.string()),
  created_at: z.string(),
});
export type Listener = z.infer<typeof listenerSchema>;
export const listenerListResponseSchema = z.object({ resources: z.array(listenerSchema), offset: z.number(), limit: z.number(), total: z.number() });
export const listenerListQuerySchema = z.strictObject({ limit: pageLimit, offset: pageOffset });

export const gitHostInstallResponseSchema = z.object({
  integration_id: z.string(),
  /** Push webhooks to this URL build `build_on_push` deployments; signed with webhook_secret (X-Hub-Signature-256). */
  webhook_url: z.string(),
  webhook_secret: z.string(),
});
export type GitHostInstall = z.infer<typeof gitHostInstallResponseSchema>;

/** A git push notification (the fields of a GitHub push event that matter here). */
export const gitPushEventSchema = z.object({
  ref: z.string().min(1),
  after: z.string().optional(),
  repository: z.object({ clone_url: z.string().optional(), url: z.string().optional(), html_url: z.string().optional() }).optional(),
});
export const gitPushResponseSchema = z.object({ revisions: z.array(z.object({ deployment_id: z.string(), revision_id: z.string() })) });

export const uploadUrlResponseSchema = z.object({
  /** Goes into source_revision_config.source_tarball_path. */
  object_path: z.string(),
  /** PUT the gzipped tarball here (no other credentials needed; expires). */
  upload_url: z.string(),
  expires_at: z.string(),
});
export type UploadUrl = z.infer<typeof uploadUrlResponseSchema>;

/** Bus event on topic `deployments`: the query service creates the tracing project of a new deployment. */
export const deploymentCreatedEventSchema = z.object({
  kind: z.literal('deployment_created'),
  tenant_id: z.string(),
  deployment_id: z.string(),
  name: z.string(),
  created_at: z.string(),
});
export type DeploymentCreatedEvent = z.infer<typeof deploymentCreatedEventSchema>;
