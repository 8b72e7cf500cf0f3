import { z } from 'zod';
import { zonedDateTime } from './common.schema';
import { USAGE_LIMIT_TYPES } from './identity.schema';
import { tenantHandle } from './prompt-hub.schema';

/** Every permission a role can grant. organization:* act on the organization, the rest inside a workspace. */
export const PERMISSIONS = [
  'organization:manage',
  'organization:read',
  'workspace:manage',
  'workspace:read',
  'workspace:write',
  'runs:read',
  'runs:write',
  'projects:read',
  'projects:write',
  'datasets:read',
  'datasets:write',
  'deployments:read',
  'deployments:write',
  'exports:manage',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const uuid = z.string().uuid();
const iso = zonedDateTime();
const name = z.string().trim().min(1).max(200);

export const idParamSchema = z.object({ id: uuid }).strict();
export const userIdParamSchema = z.object({ user_id: uuid }).strict();

// --- credentials: API keys, personal access tokens, service keys -------------------------------

export const CREDENTIAL_KINDS = ['api_key', 'personal_access_token', 'service_key'] as const;

export const apiKeyCreateSchema = z
  .object({
    description: z.string().max(500).optional(),
    /** When the key stops working; must be in the future. */
    expires_at: iso.nullable().optional(),
    /** The role whose permissions the key carries (API keys and service keys); default Workspace Admin. */
    role_id: uuid.optional(),
    /** Service keys only: null makes an organization-scoped key (calls name the workspace with X-Tenant-Id). */
    workspace_id: uuid.nullable().optional(),
  })
  .strict();
export type ApiKeyCreate = z.infer<typeof apiKeyCreateSchema>;

export const apiKeyInfoSchema = z.object({
  id: uuid,
  kind: z.enum(CREDENTIAL_KINDS),
  /** The first characters of the key; the whole key is shown only once, at creation. */
  short_key: z.string(),
  description: z.string().nullable(),
  organization_id: uuid,
  workspace_id: uuid.nullable(),
  user_id: uuid.nullable(),
  role_id: uuid.nullable(),
  permissions: z.array(z.string()),
  created_at: z.string(),
  expires_at: z.string().nullable(),
});
export type ApiKeyInfo = z.infer<typeof apiKeyInfoSchema>;
export const apiKeyCreatedSchema = apiKeyInfoSchema.extend({ key: z.string() });
export type ApiKeyCreated = z.infer<typeof apiKeyCreatedSchema>;

// --- sessions (bearer tokens) ---------------------------------------------------------------------

export const loginRequestSchema = z
  .object({
    email: z.string().email(),
    password: z.string().min(1).max(500),
    /** The organization the session acts in, for a user of several; default: the one the user joined first. */
    organization_id: uuid.optional(),
  })
  .strict();
export const loginResponseSchema = z.object({ access_token: z.string(), token_type: z.literal('bearer'), expires_in: z.number().int() });
export type LoginResponse = z.infer<typeof loginResponseSchema>;

/**
 * POST /auth/session: the web app's sign-in, answered with an httpOnly session cookie (never a token the
 * page could read): by API key, by email and password, or by a one-time sign-in token (`npm start`'s link).
 */
export const sessionCreateSchema = z.union([
  z.object({ api_key: z.string().min(1).max(500) }).strict(),
  loginRequestSchema,
  z.object({ sign_in_token: z.string().min(1).max(200) }).strict(),
]);
export type SessionCreate = z.infer<typeof sessionCreateSchema>;
/** Who the session cookie signs in as (POST and GET /auth/session). */
export const sessionInfoSchema = z.object({
  organization_id: z.string(),
  /** The workspace the session acts in when a request names none (X-Tenant-Id); '' when it has none. */
  tenant_id: z.string(),
  user_id: z.string().nullable(),
  credential_type: z.string(),
});
export type SessionInfo = z.infer<typeof sessionInfoSchema>;

// --- workspaces ------------------------------------------------------------------------------------

/** The published API names a workspace `display_name`; `name` is this service's older spelling, still accepted. */
const workspaceNames = { display_name: name.optional(), name: name.optional() };
const oneName = (b: { display_name?: string; name?: string }) => b.display_name === undefined || b.name === undefined || b.display_name === b.name;

export const workspaceCreateSchema = z
  .object({ ...workspaceNames, tenant_handle: tenantHandle.nullish() })
  .strict()
  .refine((b) => b.display_name !== undefined || b.name !== undefined, { message: 'display_name is required', path: ['display_name'] })
  .refine(oneName, { message: 'name and display_name differ: send display_name only', path: ['name'] })
  .transform(({ display_name, name: old, tenant_handle }) => ({ display_name: (display_name ?? old)!, tenant_handle: tenant_handle ?? null }));
/** Absent fields (and a null name) are left as they are; tenant_handle: null removes the handle. */
export const workspaceUpdateSchema = z
  .object({ display_name: name.nullish(), name: name.nullish(), tenant_handle: tenantHandle.nullish() })
  .strict()
  .refine((b) => oneName({ display_name: b.display_name ?? undefined, name: b.name ?? undefined }), { message: 'name and display_name differ: send display_name only', path: ['name'] })
  .transform(({ display_name, name: old, tenant_handle }) => ({ display_name: display_name ?? old ?? undefined, tenant_handle }));
export const workspaceSchema = z.object({
  id: uuid,
  organization_id: uuid,
  display_name: z.string(),
  /** The same as display_name, for clients of this service's older shape. */
  name: z.string(),
  tenant_handle: z.string().nullable(),
  created_at: z.string(),
});
export type Workspace = z.infer<typeof workspaceSchema>;
export type WorkspaceCreate = z.output<typeof workspaceCreateSchema>;
export type WorkspaceUpdate = z.output<typeof workspaceUpdateSchema>;

/**
 * Published on `workspaces` after a workspace is created, changed or deleted: its current state, keyed by its id.
 * The workspace owns its tenant handle; services that show or resolve handles (the prompt hub) keep a copy from these.
 */
export const workspaceChangedEventSchema = z.object({
  workspace_id: uuid,
  organization_id: uuid,
  tenant_handle: z.string().nullable(),
  deleted: z.boolean(),
});
export type WorkspaceChangedEvent = z.infer<typeof workspaceChangedEventSchema>;

// --- roles -----------------------------------------------------------------------------------------

export const ROLE_SCOPES = ['organization', 'workspace'] as const;
export const roleCreateSchema = z
  .object({
    name,
    description: z.string().max(1000).optional(),
    scope: z.enum(ROLE_SCOPES).default('workspace'),
    permissions: z.array(z.enum(PERMISSIONS)).min(1),
  })
  .strict();
export const roleUpdateSchema = z
  .object({ name: name.optional(), description: z.string().max(1000).optional(), permissions: z.array(z.enum(PERMISSIONS)).min(1).optional() })
  .strict()
  .refine((v) => Object.keys(v).length > 0, { message: 'at least one field must be given' });
export const roleSchema = z.object({
  id: uuid,
  organization_id: uuid.nullable(),
  name: z.string(),
  description: z.string().nullable(),
  scope: z.enum(ROLE_SCOPES),
  permissions: z.array(z.string()),
  builtin: z.boolean(),
});
export type Role = z.infer<typeof roleSchema>;

// --- organization members and invitations ---------------------------------------------------------

export const orgInviteSchema = z
  .object({ email: z.string().email(), role_id: uuid.optional(), workspace_ids: z.array(uuid).max(100).optional(), workspace_role_id: uuid.optional() })
  .strict();
export const basicAuthUsersSchema = z
  .object({
    users: z
      .array(
        z
          .object({
            email: z.string().email(),
            full_name: z.string().max(200).optional(),
            password: z.string().min(8).max(500),
            role_id: uuid.optional(),
          })
          .strict(),
      )
      .min(1)
      .max(100),
  })
  .strict();
export const memberRoleUpdateSchema = z.object({ role_id: uuid }).strict();
export const workspaceMemberAddSchema = z.object({ user_id: uuid, role_id: uuid.optional() }).strict();

export const orgMemberSchema = z.object({ user_id: uuid, email: z.string(), full_name: z.string().nullable(), role_id: uuid, created_at: z.string() });
export type OrgMember = z.infer<typeof orgMemberSchema>;
export const pendingMemberSchema = z.object({
  id: uuid,
  email: z.string(),
  role_id: uuid,
  workspace_ids: z.array(uuid),
  workspace_role_id: uuid.nullable(),
  created_at: z.string(),
});
export type PendingMember = z.infer<typeof pendingMemberSchema>;
/** An invitation addressed to the calling user, from any organization (GET /api/v1/orgs/pending); claimable until expires_at. */
export const pendingInvitationSchema = pendingMemberSchema.extend({ organization_id: uuid, organization_name: z.string(), expires_at: z.string() });
export type PendingInvitation = z.infer<typeof pendingInvitationSchema>;
export const orgMembersSchema = z.object({ members: z.array(orgMemberSchema), pending: z.array(pendingMemberSchema) });
export type OrgMembers = z.infer<typeof orgMembersSchema>;
export const workspaceMemberSchema = z.object({ user_id: uuid, workspace_id: uuid, role_id: uuid, created_at: z.string() });
export type WorkspaceMember = z.infer<typeof workspaceMemberSchema>;

// --- workspace secrets, retention and usage limits --------------------------------------------------

/** Upserts each key; a null value deletes it. Values are write-only: reads return key names only. */
export const workspaceSecretsUpdateSchema = z
  .array(z.object({ key: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an identifier'), value: z.string().max(65536).nullable() }).strict())
  .min(1)
  .max(200);
export const workspaceSecretKeySchema = z.object({ key: z.string(), updated_at: z.string() });
export type WorkspaceSecretKey = z.infer<typeof workspaceSecretKeySchema>;

const retentionDays = z.number().int().min(1).max(3650).nullable();
/** Retention per trace_tier in days; null keeps that tier forever. */
export const ttlSettingsUpdateSchema = z
  .object({ shortlived_days: retentionDays.optional(), longlived_days: retentionDays.optional() })
  .strict()
  .refine((v) => Object.keys(v).length > 0, { message: 'at least one field must be given' });
export const ttlSettingsSchema = z.object({ workspace_id: uuid, shortlived_days: z.number().int().nullable(), longlived_days: z.number().int().nullable() });
export type TtlSettings = z.infer<typeof ttlSettingsSchema>;

export const usageLimitUpsertSchema = z.object({ limit_type: z.enum(USAGE_LIMIT_TYPES), limit_value: z.number().int().min(0).max(1e12) }).strict();
export const usageLimitSchema = z.object({
  id: uuid,
  workspace_id: uuid,
  limit_type: z.enum(USAGE_LIMIT_TYPES),
  limit_value: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type UsageLimit = z.infer<typeof usageLimitSchema>;

// --- the organization ------------------------------------------------------------------------------

/** can_use_audit_logs: the stored organization setting; null follows DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS. */
export const organizationUpdateSchema = z
  .object({ name: name.optional(), can_use_audit_logs: z.boolean().nullable().optional() })
  .strict()
  .refine((v) => Object.keys(v).length > 0, { message: 'at least one field must be given' });
export const organizationSchema = z.object({
  id: uuid,
  name: z.string(),
  plan: z.enum(['free', 'plus', 'enterprise']),
  is_personal: z.boolean(),
  can_use_audit_logs: z.boolean().nullable(),
  /** Whether audit logs are on for this organization (the setting, else the installation default). */
  audit_logs_enabled: z.boolean(),
  created_at: z.string(),
});
export type Organization = z.infer<typeof organizationSchema>;
