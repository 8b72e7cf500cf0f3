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

/** Any of these lets a caller write in a workspace; a role with none of them (a viewer) only reads. */
export const WORKSPACE_WRITE_PERMISSIONS = ['workspace:write', 'runs:write', 'projects:write', 'datasets:write', 'deployments:write'];
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Reads sent as POST (a query body). */
const READ_OVER_POST = /\/(query|stats)\/?$/;

/**
 * The default for workspace routes that declare no @RequirePermissions: reads need membership
 * only, writes need a write permission, so a viewer role cannot change workspace data.
 */
export function assertDefaultWorkspaceAccess(identity: Identity, method: string, path: string): void {
  if (READ_METHODS.has(method) || (method === 'POST' && READ_OVER_POST.test(path))) return;
  if (!identity.permissions.some((p) => WORKSPACE_WRITE_PERMISSIONS.includes(p))) throw forbidden('Missing permission: this role can only read the workspace');
}
