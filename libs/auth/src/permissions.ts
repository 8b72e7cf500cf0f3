import { SetMetadata } from '@nestjs/common';
import type { Identity, Plan } from '@th/contracts';
import { forbidden } from '@th/platform';

export const REQUIRED_PERMISSIONS_KEY = 'th:permissions';
export const ORGANIZATION_SCOPE_KEY = 'th:organization-scope';
export const REQUIRED_PLANS_KEY = 'th:plans';

/** The caller needs every listed permission (403 otherwise). Checked by AuthGuard. */
export const RequirePermissions = (...permissions: string[]) => SetMetadata(REQUIRED_PERMISSIONS_KEY, permissions);

/** The caller's organization needs one of these plans (403 otherwise), e.g. bulk export: plus or enterprise. */
export const RequirePlan = (...plans: Plan[]) => SetMetadata(REQUIRED_PLANS_KEY, plans);

/**
 * The route acts on the organization, not a workspace: it accepts a caller that named no workspace
 * (tenant_id ''). Every other route needs a workspace.
 */
export const OrganizationScope = () => SetMetadata(ORGANIZATION_SCOPE_KEY, true);

export function hasPermissions(identity: Identity, required: readonly string[]): boolean {
  return required.every((p) => identity.permissions.includes(p));
}

export function assertPermissions(identity: Identity, required: readonly string[]): void {
  const missing = required.filter((p) => !identity.permissions.includes(p));
  if (missing.length > 0) throw forbidden(`Missing permission: ${missing.join(', ')}`);
}

export function assertPlan(identity: Identity, plans: readonly Plan[]): void {
  if (!plans.includes(identity.plan)) throw forbidden(`This feature needs the ${plans.join(' or ')} plan; the organization is on ${identity.plan}`);
}
