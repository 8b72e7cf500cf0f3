import { z } from 'zod';
import { errorBodySchema, httpValidationErrorSchema } from '../common.schema';
import { hubDirectoryCommitSchema, hubDirectoryQuerySchema, hubDirectorySchema, hubSettingsSchema, promptCommitCreateSchema, promptCommitGetQuerySchema, promptCommitListQuerySchema, promptCommitListSchema, promptCommitPulledSchema, promptCommitResponseSchema, promptCommitTagSchema, promptLikeResponseSchema, promptLikeSchema, promptRepoCreateSchema, promptRepoListQuerySchema, promptRepoListSchema, promptRepoResponseSchema, promptRepoUpdateSchema, promptTagCreateSchema, promptTagUpdateSchema, promptWebhookCreateSchema, promptWebhookCreatedSchema, promptWebhookDeliveryListQuerySchema, promptWebhookDeliveryListSchema, promptWebhookSchema, promptWebhookTestResultSchema, promptWebhookTestSchema, promptWebhookUpdateSchema, tenantHandleSetSchema } from '../prompt-hub.schema';
import type { RouteSpec } from './route';

const ok = z.object({}).passthrough();
const errors = { 401: errorBodySchema, 404: errorBodySchema, 422: httpValidationErrorSchema };
const writeErrors = { ...errors, 403: errorBodySchema, 409: errorBodySchema };
const repo = '/api/v1/repos/{owner}/{repo}';

/** The hub settings: the workspace's tenant handle, which the workspace owns (served by the gateway). */
export const HUB_SETTINGS_ROUTES: Omit<RouteSpec, 'service'>[] = [
  { method: 'get', path: '/api/v1/settings', summary: "The workspace's hub settings: id and tenant_handle (null until set)", tag: 'prompt-hub', responses: { 200: hubSettingsSchema, 401: errorBodySchema } },
  { method: 'post', path: '/api/v1/settings/handle', audit: { operation: 'set_tenant_handle' }, summary: "Set the workspace's tenant handle (its hub owner name), once (409 when set or taken); PATCH /workspaces/{id} changes it", tag: 'prompt-hub', body: tenantHandleSetSchema, responses: { 200: hubSettingsSchema, 409: errorBodySchema, ...errors } },
];

/** The prompt hub (served by the query service). `{owner}` is `-` (own workspace) or a workspace's hub handle. */
export const PROMPT_HUB_ROUTES: Omit<RouteSpec, 'service'>[] = [
  { method: 'get', path: '/api/v1/repos', summary: "List the workspace's prompts (is_public=true: every workspace's public prompts; tenant_handle: one workspace's), filtered and sorted", tag: 'prompt-hub', query: promptRepoListQuerySchema, responses: { 200: promptRepoListSchema, ...errors } },
  { method: 'post', path: '/api/v1/repos', summary: 'Create a prompt (a public one needs a hub handle); 409 on a name taken in the workspace', tag: 'prompt-hub', body: promptRepoCreateSchema, responses: { 200: promptRepoResponseSchema, 400: errorBodySchema, ...writeErrors } },
  { method: 'get', path: repo, summary: "Read a prompt (another workspace's private prompt is a 404); counts a view from another workspace", tag: 'prompt-hub', responses: { 200: promptRepoResponseSchema, ...errors } },
  { method: 'patch', path: repo, summary: 'Update a prompt (description, readme, tags, is_public, is_archived); owner workspace only', tag: 'prompt-hub', body: promptRepoUpdateSchema, responses: { 200: promptRepoResponseSchema, 400: errorBodySchema, ...writeErrors } },
  { method: 'delete', path: repo, summary: 'Delete a prompt with its commits, tags and likes; owner workspace only', tag: 'prompt-hub', responses: { 200: ok, ...writeErrors } },
  { method: 'get', path: `${repo}/tags`, summary: "A prompt's commit tags", tag: 'prompt-hub', responses: { 200: z.array(promptCommitTagSchema), ...errors } },
  { method: 'post', path: `${repo}/tags`, summary: 'Tag a commit (409 when the tag exists: move it with PATCH)', tag: 'prompt-hub', body: promptTagCreateSchema, responses: { 200: promptCommitTagSchema, ...writeErrors } },
  { method: 'get', path: `${repo}/tags/{tag_name}`, summary: 'Read a commit tag', tag: 'prompt-hub', responses: { 200: promptCommitTagSchema, ...errors } },
  { method: 'patch', path: `${repo}/tags/{tag_name}`, summary: 'Move a commit tag to another commit', tag: 'prompt-hub', body: promptTagUpdateSchema, responses: { 200: promptCommitTagSchema, ...writeErrors } },
  { method: 'delete', path: `${repo}/tags/{tag_name}`, summary: 'Delete a commit tag', tag: 'prompt-hub', responses: { 200: ok, ...writeErrors } },
  { method: 'get', path: '/api/v1/commits/{owner}/{repo}', summary: "A prompt's commits, newest first", tag: 'prompt-hub', query: promptCommitListQuerySchema, responses: { 200: promptCommitListSchema, ...errors } },
  { method: 'post', path: '/api/v1/commits/{owner}/{repo}', summary: 'Commit a manifest (serialized LangChain JSON, kept as sent; the hash is a content hash); 409 on a stale parent_commit or an unchanged manifest, 400 on an unsupported manifest type', tag: 'prompt-hub', body: promptCommitCreateSchema, responses: { 200: promptCommitResponseSchema, 400: errorBodySchema, ...writeErrors } },
  { method: 'get', path: '/api/v1/commits/{owner}/{repo}/{ref}', summary: 'Pull a commit by latest, tag, hash or hash prefix (include_model: the prompt with its model as a RunnableSequence); counts a download', tag: 'prompt-hub', query: promptCommitGetQuerySchema, responses: { 200: promptCommitPulledSchema, 400: errorBodySchema, ...errors } },
  { method: 'get', path: '/api/v1/prompt-webhooks', summary: "The workspace's prompt webhooks (header values masked)", tag: 'prompt-hub', responses: { 200: z.array(promptWebhookSchema), 401: errorBodySchema } },
  { method: 'post', path: '/api/v1/prompt-webhooks', audit: { operation: 'create_prompt_webhook' }, summary: 'Create a prompt webhook (url under the outbound policy); the answer carries its signing secret, shown once', tag: 'prompt-hub', body: promptWebhookCreateSchema, responses: { 200: promptWebhookCreatedSchema, 409: errorBodySchema, ...errors } },
  { method: 'get', path: '/api/v1/prompt-webhooks/{webhook_id}', summary: 'Read a prompt webhook', tag: 'prompt-hub', responses: { 200: promptWebhookSchema, ...errors } },
  { method: 'get', path: '/api/v1/prompt-webhooks/{webhook_id}/deliveries', summary: "A prompt webhook's deliveries, newest first: status, tries, the last answer's status code and error (kept 7 days after they end)", tag: 'prompt-hub', query: promptWebhookDeliveryListQuerySchema, responses: { 200: promptWebhookDeliveryListSchema, ...errors } },
  { method: 'patch', path: '/api/v1/prompt-webhooks/{webhook_id}', audit: { operation: 'update_prompt_webhook', resourceType: 'prompt_webhook', resourceParam: 'webhook_id' }, summary: 'Update a prompt webhook (fields left out keep their values)', tag: 'prompt-hub', body: promptWebhookUpdateSchema, responses: { 200: promptWebhookSchema, ...errors } },
  { method: 'delete', path: '/api/v1/prompt-webhooks/{webhook_id}', audit: { operation: 'delete_prompt_webhook', resourceType: 'prompt_webhook', resourceParam: 'webhook_id' }, summary: 'Delete a prompt webhook', tag: 'prompt-hub', responses: { 200: ok, ...errors } },
  { method: 'post', path: '/api/v1/prompt-webhooks/test', audit: { operation: 'test_prompt_webhook' }, summary: 'Send one unsigned POST of payload to an unsaved webhook and report how it went', tag: 'prompt-hub', body: promptWebhookTestSchema, responses: { 200: promptWebhookTestResultSchema, ...errors } },
  { method: 'get', path: '/api/v1/platform/hub/repos/{owner}/{repo}/directories', summary: "An agent's or skill's files at a commit (latest by default); counts a download", tag: 'prompt-hub', query: hubDirectoryQuerySchema, responses: { 200: hubDirectorySchema, 400: errorBodySchema, ...errors } },
  { method: 'post', path: '/api/v1/platform/hub/repos/{owner}/{repo}/directories/commits', summary: "Commit an agent's or skill's files: entries added or replaced, null deletes; 409 on a stale parent_commit", tag: 'prompt-hub', body: hubDirectoryCommitSchema, responses: { 200: promptCommitResponseSchema, 400: errorBodySchema, ...writeErrors } },
  { method: 'delete', path: '/api/v1/platform/hub/repos/{owner}/{repo}/directories', summary: 'Delete an agent or skill repo', tag: 'prompt-hub', responses: { 200: ok, 400: errorBodySchema, ...writeErrors } },
  { method: 'post', path: '/api/v1/likes/{owner}/{repo}', summary: 'Like or unlike a prompt (one like per user, or per workspace for API keys)', tag: 'prompt-hub', body: promptLikeSchema, responses: { 200: promptLikeResponseSchema, ...errors } },
];
