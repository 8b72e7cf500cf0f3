export * from './gateway.module';
export * from './info.controller';
export * from './identity/identity.service';
export * from './identity/identity.entities';
export * from './identity/roles';
export * from './admin/admin-store';
export * from './admin/admin.services';
export * from './openapi/openapi.document';
export * from './proxy/gateway-proxy';
export * from './proxy/proxy-server';
export * from './rate-limit/rate-limit.rules';
export * from './rate-limit/rate-limit.config';
export * from './rate-limit/counter-store';
export * from './rate-limit/rate-limiter';
import {
  ApiKeyEntity,
  OrganizationEntity,
  OrgInvitationEntity,
  OrgMemberEntity,
  RoleEntity,
  UsageLimitEntity,
  UserEntity,
  WorkspaceEntity,
  WorkspaceMemberEntity,
  WorkspaceSecretEntity,
} from './identity/identity.entities';
import { Identity1732250000001 } from './migrations/1732250000001-identity';
import { Admin1732250000002 } from './migrations/1732250000002-admin';
import { WorkspaceSecretsSealed1732250000003 } from './migrations/1732250000003-workspace-secrets-sealed';
import { WorkspaceTenantHandle1732250000004 } from './migrations/1732250000004-workspace-tenant-handle';
export const GATEWAY_ENTITIES = [
  OrganizationEntity,
  WorkspaceEntity,
  ApiKeyEntity,
  UserEntity,
  RoleEntity,
  OrgMemberEntity,
  OrgInvitationEntity,
  WorkspaceMemberEntity,
  WorkspaceSecretEntity,
  UsageLimitEntity,
];
export const GATEWAY_MIGRATIONS = [Identity1732250000001, Admin1732250000002, WorkspaceSecretsSealed1732250000003, WorkspaceTenantHandle1732250000004];
