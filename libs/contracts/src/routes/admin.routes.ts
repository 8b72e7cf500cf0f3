import { z } from 'zod';
import { apiKeyCreateSchema, apiKeyCreatedSchema, apiKeyInfoSchema, basicAuthUsersSchema, loginRequestSchema, loginResponseSchema, memberRoleUpdateSchema, orgInviteSchema, orgMemberSchema, orgMembersSchema, organizationSchema, organizationUpdateSchema, pendingInvitationSchema, pendingMemberSchema, roleCreateSchema, roleSchema, roleUpdateSchema, sessionCreateSchema, sessionInfoSchema, ttlSettingsSchema, ttlSettingsUpdateSchema, usageLimitSchema, usageLimitUpsertSchema, workspaceCreateSchema, workspaceMemberAddSchema, workspaceMemberSchema, workspaceSchema, workspaceSecretKeySchema, workspaceSecretsUpdateSchema, workspaceUpdateSchema } from '../admin.schema';
import { errorBodySchema, httpValidationErrorSchema } from '../common.schema';
import type { RouteSpec } from './route';

const empty = z.object({});
const read = { 401: errorBodySchema, 403: errorBodySchema };
const write = { 400: errorBodySchema, 401: errorBodySchema, 403: errorBodySchema, 404: errorBodySchema, 409: errorBodySchema, 422: httpValidationErrorSchema };
const tracked = (op: string) => ` (audit: ${op})`;

/** The administration endpoints the gateway serves itself (identity, members, roles, workspace settings). */
export const ADMIN_ROUTES: Omit<RouteSpec, 'service'>[] = [
  { method: 'post', path: '/api/v1/auth/login', summary: 'Sign in a basic-auth user: a session bearer token (HS256 JWT)', tag: 'auth', body: loginRequestSchema, responses: { 200: loginResponseSchema, 401: errorBodySchema, 422: httpValidationErrorSchema }, public: true },
  { method: 'post', path: '/api/v1/auth/session', summary: 'Sign the web app in (API key, email and password, or a one-time sign-in token): an httpOnly SameSite=Strict session cookie; needs the x-requested-with header', tag: 'auth', body: sessionCreateSchema, responses: { 200: sessionInfoSchema, 401: errorBodySchema, 403: errorBodySchema, 422: httpValidationErrorSchema }, public: true },
  { method: 'get', path: '/api/v1/auth/session', summary: 'Who the session cookie (or any credential) signs in as', tag: 'auth', responses: { 200: sessionInfoSchema, ...read } },
  { method: 'delete', path: '/api/v1/auth/session', summary: 'Sign out: clears the session cookie; needs the x-requested-with header', tag: 'auth', responses: { 200: empty, 403: errorBodySchema }, public: true },
  { method: 'get', path: '/api/v1/api-key', summary: "The calling workspace's API keys (prefix only)", tag: 'credentials', responses: { 200: z.array(apiKeyInfoSchema), ...read } },
  { method: 'post', path: '/api/v1/api-key', summary: `Create a workspace API key; the whole key is returned once${tracked('create_api_key')}`, tag: 'credentials', body: apiKeyCreateSchema, responses: { 200: apiKeyCreatedSchema, ...write } },
  { method: 'delete', path: '/api/v1/api-key/{id}', summary: `Revoke a workspace API key${tracked('delete_api_key')}`, tag: 'credentials', responses: { 200: empty, ...write } },
  { method: 'get', path: '/api/v1/api-key/current', summary: "The calling user's personal access tokens", tag: 'credentials', responses: { 200: z.array(apiKeyInfoSchema), ...read } },
  { method: 'post', path: '/api/v1/api-key/current', summary: `Create a personal access token for the calling user${tracked('create_personal_access_token')}`, tag: 'credentials', body: apiKeyCreateSchema, responses: { 200: apiKeyCreatedSchema, ...write } },
  { method: 'delete', path: '/api/v1/api-key/current/{id}', summary: `Revoke a personal access token${tracked('delete_personal_access_token')}`, tag: 'credentials', responses: { 200: empty, ...write } },
  { method: 'get', path: '/api/v1/service-keys', summary: "The organization's service keys", tag: 'credentials', responses: { 200: z.array(apiKeyInfoSchema), ...read } },
  { method: 'post', path: '/api/v1/service-keys', summary: `Create a service key for one workspace or (workspace_id null) the organization${tracked('create_service_key')}`, tag: 'credentials', body: apiKeyCreateSchema, responses: { 200: apiKeyCreatedSchema, ...write } },
  { method: 'delete', path: '/api/v1/service-keys/{id}', summary: `Revoke a service key${tracked('delete_service_key')}`, tag: 'credentials', responses: { 200: empty, ...write } },
  { method: 'get', path: '/api/v1/workspaces', summary: "The organization's workspaces", tag: 'workspaces', responses: { 200: z.array(workspaceSchema), ...read } },
  { method: 'post', path: '/api/v1/workspaces', summary: `Create a workspace${tracked('create_workspace')}`, tag: 'workspaces', body: workspaceCreateSchema, responses: { 200: workspaceSchema, ...write } },
  { method: 'patch', path: '/api/v1/workspaces/{id}', summary: `Rename a workspace${tracked('update_workspace')}`, tag: 'workspaces', body: workspaceUpdateSchema, responses: { 200: workspaceSchema, ...write } },
  { method: 'delete', path: '/api/v1/workspaces/{id}', summary: `Delete a workspace with its keys, members, secrets and limits${tracked('delete_workspace')}`, tag: 'workspaces', responses: { 200: empty, ...write } },
  { method: 'get', path: '/api/v1/workspaces/current/members', summary: 'Members of the calling workspace', tag: 'workspaces', responses: { 200: z.array(workspaceMemberSchema), ...read } },
  { method: 'post', path: '/api/v1/workspaces/current/members', summary: `Add an organization member to the workspace${tracked('add_member_to_workspace')}`, tag: 'workspaces', body: workspaceMemberAddSchema, responses: { 200: workspaceMemberSchema, ...write } },
  { method: 'patch', path: '/api/v1/workspaces/current/members/{user_id}', summary: `Change a workspace member's role${tracked('update_workspace_member')}`, tag: 'workspaces', body: memberRoleUpdateSchema, responses: { 200: workspaceMemberSchema, ...write } },
  { method: 'delete', path: '/api/v1/workspaces/current/members/{user_id}', summary: `Remove a workspace member${tracked('delete_workspace_member')}`, tag: 'workspaces', responses: { 200: empty, ...write } },
  { method: 'get', path: '/api/v1/workspaces/current/secrets', summary: 'Names of the workspace secrets (values are write-only)', tag: 'workspaces', responses: { 200: z.array(workspaceSecretKeySchema), ...read } },
  { method: 'post', path: '/api/v1/workspaces/current/secrets', summary: `Upsert workspace secrets; a null value deletes${tracked('update_workspace_secrets')}`, tag: 'workspaces', body: workspaceSecretsUpdateSchema, responses: { 200: z.array(workspaceSecretKeySchema), ...write } },
  { method: 'get', path: '/api/v1/workspaces/current/ttl-settings', summary: 'Retention of runs per trace_tier, in days', tag: 'retention', responses: { 200: ttlSettingsSchema, ...read } },
  { method: 'put', path: '/api/v1/workspaces/current/ttl-settings', summary: `Set the retention per trace_tier (applies to runs written from now on)${tracked('update_ttl_settings')}`, tag: 'retention', body: ttlSettingsUpdateSchema, responses: { 200: ttlSettingsSchema, ...write } },
  { method: 'get', path: '/api/v1/usage-limits', summary: "The calling workspace's usage limits", tag: 'retention', responses: { 200: z.array(usageLimitSchema), ...read } },
  { method: 'put', path: '/api/v1/usage-limits', summary: `Set a usage limit (monthly_traces: ingest answers 429 past it)${tracked('update_usage_limit')}`, tag: 'retention', body: usageLimitUpsertSchema, responses: { 200: usageLimitSchema, ...write } },
  { method: 'delete', path: '/api/v1/usage-limits/{id}', summary: `Remove a usage limit${tracked('delete_usage_limit')}`, tag: 'retention', responses: { 200: empty, ...write } },
  { method: 'get', path: '/api/v1/orgs/current', summary: 'The calling organization: plan, the can_use_audit_logs setting and whether audit logs are on', tag: 'organization', responses: { 200: organizationSchema, ...read } },
  { method: 'patch', path: '/api/v1/orgs/current', summary: `Rename the organization or set can_use_audit_logs (null: the installation default)${tracked('update_organization_info')}`, tag: 'organization', body: organizationUpdateSchema, responses: { 200: organizationSchema, ...write } },
  { method: 'get', path: '/api/v1/orgs/current/members', summary: 'Organization members and pending invitations', tag: 'organization', responses: { 200: orgMembersSchema, ...read } },
  { method: 'post', path: '/api/v1/orgs/current/members', summary: `Invite a user by email (a pending member)${tracked('invite_user_to_org')}`, tag: 'organization', body: orgInviteSchema, responses: { 200: pendingMemberSchema, ...write } },
  { method: 'post', path: '/api/v1/orgs/current/members/basic', summary: `Create basic-auth users as members (consumes their invitations)${tracked('add_basic_auth_users_to_org')}`, tag: 'organization', body: basicAuthUsersSchema, responses: { 200: z.array(orgMemberSchema), ...write } },
  { method: 'patch', path: '/api/v1/orgs/current/members/{user_id}', summary: `Change a member's organization role${tracked('update_org_member')}`, tag: 'organization', body: memberRoleUpdateSchema, responses: { 200: orgMemberSchema, ...write } },
  { method: 'delete', path: '/api/v1/orgs/current/members/{user_id}', summary: `Remove a member, their workspace memberships and tokens${tracked('delete_org_member')}`, tag: 'organization', responses: { 200: empty, ...write } },
  { method: 'delete', path: '/api/v1/orgs/current/members/pending/{id}', summary: `Delete a pending invitation${tracked('delete_org_pending_member')}`, tag: 'organization', responses: { 200: empty, ...write } },
  { method: 'get', path: '/api/v1/orgs/pending', summary: 'The calling user\'s invitations (any organization) that can still be claimed', tag: 'organization', responses: { 200: z.array(pendingInvitationSchema), ...read } },
  { method: 'post', path: '/api/v1/orgs/pending/{id}/claim', summary: `The invited user (session or personal access token) accepts an invitation: joins the inviting organization with its roles; returns a session there. Unknown, already-claimed or someone else's invitation: 404; expired (7 days): 400${tracked('update_org_member')}`, tag: 'organization', responses: { 200: loginResponseSchema, ...write } },
  { method: 'delete', path: '/api/v1/orgs/pending/{id}', summary: `The invited user declines an invitation (deleted). Unknown or someone else's invitation: 404${tracked('delete_org_pending_member')}`, tag: 'organization', responses: { 200: empty, ...write } },
  { method: 'get', path: '/api/v1/orgs/current/roles', summary: 'Built-in and custom roles', tag: 'organization', responses: { 200: z.array(roleSchema), ...read } },
  { method: 'post', path: '/api/v1/orgs/current/roles', summary: `Create a custom role${tracked('create_role')}`, tag: 'organization', body: roleCreateSchema, responses: { 200: roleSchema, ...write } },
  { method: 'patch', path: '/api/v1/orgs/current/roles/{id}', summary: `Update a custom role (keys with the role follow)${tracked('update_role')}`, tag: 'organization', body: roleUpdateSchema, responses: { 200: roleSchema, ...write } },
  { method: 'delete', path: '/api/v1/orgs/current/roles/{id}', summary: `Delete an unused custom role${tracked('delete_role')}`, tag: 'organization', responses: { 200: empty, ...write } },
];
