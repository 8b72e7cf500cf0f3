import { z } from 'zod';

export const PLANS = ['free', 'plus', 'enterprise'] as const;

/** The authenticated caller, established by the gateway and forwarded (signed) to services. */
export const identitySchema = z.object({
  organization_id: z.string(),
  tenant_id: z.string(),
  user_id: z.string().nullable(),
  credential_id: z.string().nullable(),
  credential_type: z.enum(['api_key', 'personal_access_token', 'service_key', 'session', 'internal']),
  plan: z.enum(PLANS),
  permissions: z.array(z.string()),
  /** Organization-level feature flags the services gate on (e.g. can_use_audit_logs). */
  org_features: z.object({ can_use_audit_logs: z.boolean().optional(), is_personal: z.boolean().optional() }).optional(),
});
export type Identity = z.infer<typeof identitySchema>;
