import { z } from 'zod';

export const PLANS = ['free', 'plus', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

/** Run retention tiers (a run's `trace_tier`). */
export const TRACE_TIERS = ['shortlived', 'longlived'] as const;
export type TraceTier = (typeof TRACE_TIERS)[number];

/** Usage limits a workspace can set; ingest refuses runs past them. */
export const USAGE_LIMIT_TYPES = ['monthly_traces'] as const;
export type UsageLimitType = (typeof USAGE_LIMIT_TYPES)[number];

/** The authenticated caller, established by the gateway and forwarded (signed) to services. */
export const identitySchema = z.object({
  organization_id: z.string(),
  /** The workspace; empty for an organization-scoped call (routes must opt in with @OrganizationScope()). */
  tenant_id: z.string(),
  user_id: z.string().nullable(),
  credential_id: z.string().nullable(),
  credential_type: z.enum(['api_key', 'personal_access_token', 'service_key', 'session', 'internal']),
  plan: z.enum(PLANS),
  permissions: z.array(z.string()),
  /** Organization-level feature flags the services gate on (e.g. can_use_audit_logs). */
  org_features: z.object({ can_use_audit_logs: z.boolean().optional(), is_personal: z.boolean().optional() }).optional(),
  /** The workspace's data-retention and usage settings, so ingest needs no lookup of its own. */
  workspace_settings: z
    .object({
      /** Days a run of each trace_tier is kept; a tier without an entry is kept forever. */
      retention_days: z.record(z.string(), z.number().int().positive()).optional(),
      usage_limits: z.record(z.string(), z.number().int().nonnegative()).optional(),
      /** The workspace's tenant handle (the prompt hub's owner name); the workspace owns it. */
      tenant_handle: z.string().nullable().optional(),
    })
    .optional(),
});
export type Identity = z.infer<typeof identitySchema>;

/** What a tenant-owned repository call is bound to: every such query names its tenant. */
export interface TenantScope {
  tenant_id: string;
}
