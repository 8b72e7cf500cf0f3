import { z } from 'zod';

/** Every `api.operation` value the spec's Events table tracks. */
export const TRACKED_OPERATIONS = [
  // API keys and credentials
  'create_api_key', 'delete_api_key', 'create_personal_access_token', 'delete_personal_access_token', 'create_service_key', 'delete_service_key',
  // Roles
  'create_role', 'update_role', 'delete_role',
  // Organization members
  'invite_user_to_org', 'invite_users_to_org_batch', 'update_org_member', 'delete_org_member', 'delete_org_pending_member', 'add_basic_auth_users_to_org', 'update_basic_auth_user',
  // SSO and authentication
  'create_sso_settings', 'update_sso_settings', 'delete_sso_settings', 'update_login_methods', 'update_default_sso_provision_organization',
  // SCIM provisioning
  'create_scim_token', 'update_scim_token', 'delete_scim_token', 'create_scim_user', 'update_scim_user', 'delete_scim_user', 'create_scim_group', 'update_scim_group', 'delete_scim_group',
  // Billing and business info
  'update_organization_info', 'update_business_info', 'update_payment_plan', 'update_payment_method', 'create_payment_setup_intent', 'create_payment_checkout_session', 'confirm_payment_checkout_session', 'create_payment_account_link',
  // Workspaces
  'create_workspace', 'update_workspace', 'delete_workspace', 'add_member_to_workspace', 'add_members_to_workspace_batch', 'delete_workspace_member', 'update_workspace_member', 'delete_workspace_pending_member', 'update_workspace_secrets', 'unshare_entities', 'set_tenant_handle',
  // Data retention
  'update_ttl_settings', 'update_usage_limit', 'delete_usage_limit',
  // Tracing projects
  'update_tracer_session', 'delete_tracer_session', 'delete_tracer_sessions',
  // Datasets
  'create_dataset', 'create_csv_dataset', 'update_dataset', 'delete_dataset', 'delete_datasets', 'update_dataset_version', 'update_dataset_splits', 'share_dataset', 'unshare_dataset', 'clone_dataset', 'create_experiment_via_upload', 'create_playground_experiment', 'create_comparative_experiment', 'delete_comparative_experiment',
  // Examples
  'create_example', 'create_examples', 'update_example', 'update_examples', 'delete_example', 'delete_examples',
  // Deployments
  'create_deployment', 'update_deployment', 'delete_deployment',
  // Prompt webhooks
  'create_prompt_webhook', 'update_prompt_webhook', 'delete_prompt_webhook', 'test_prompt_webhook',
  // Bulk exports
  'create_bulk_export', 'cancel_bulk_export', 'read_bulk_export_destination', 'create_bulk_export_destination', 'update_bulk_export_destination',
  // Resource tags
  'create_tag_key', 'update_tag_key', 'delete_tag_key', 'create_tag_value', 'update_tag_value', 'delete_tag_value', 'create_tagging', 'delete_tagging',
  // Access policies
  'create_access_policy', 'delete_access_policy', 'list_access_policies', 'read_access_policy', 'attach_access_policies', 'read_role_access_policies',
  // Custom charts
  'create_chart', 'update_chart', 'delete_chart', 'create_chart_section', 'update_chart_section', 'delete_chart_section', 'clone_chart_section', 'create_org_chart', 'update_org_chart', 'delete_org_chart', 'create_org_chart_section', 'update_org_chart_section', 'delete_org_chart_section',
  // Model pricing
  'create_model_price_map', 'update_model_price_map', 'delete_model_price_map',
] as const;
export type AuditOperation = (typeof TRACKED_OPERATIONS)[number];
export const auditOperationSchema = z.enum(TRACKED_OPERATIONS);

export const AUDIT_STATUSES = ['Success', 'Failure', 'Unknown'] as const;

/**
 * The native audit record every service publishes on the `audit` topic (the spec's
 * `unmapped.original_audit_log`). The audit service stores it and renders the API Activity event.
 */
export const auditRecordSchema = z.object({
  /** Unique id of the event (metadata.uid); a UUID chosen by the publisher, so a re-delivery is recognised. */
  id: z.string(),
  /** ISO-8601 UTC time of the operation. */
  time: z.string(),
  operation: auditOperationSchema,
  status: z.enum(AUDIT_STATUSES),
  organization_id: z.string().nullable(),
  workspace_id: z.string().nullable(),
  user_id: z.string().nullable(),
  /** The API key, personal access token or service key used; null for session auth. */
  credential_id: z.string().nullable(),
  credential_type: z.string().nullable(),
  /** UUIDs of the affected resources. */
  resources: z.array(z.object({ type: z.string(), id: z.string() })),
  /** The service that performed the operation. */
  service: z.string(),
  request: z
    .object({ method: z.string().optional(), path: z.string().optional(), ip: z.string().nullable().optional(), user_agent: z.string().nullable().optional() })
    .optional(),
  /** Why a Failure failed. */
  error: z.string().nullable().optional(),
  details: z.record(z.string(), z.unknown()).optional(),
});
export type AuditRecord = z.infer<typeof auditRecordSchema>;
