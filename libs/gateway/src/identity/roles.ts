import type { Permission } from '@th/contracts';

/** The workspace permissions a key or member needs to read and write tracing data. */
export const WORKSPACE_DATA_PERMISSIONS: Permission[] = [
  'workspace:read', 'workspace:write', 'runs:read', 'runs:write', 'projects:read', 'projects:write',
  'datasets:read', 'datasets:write', 'deployments:read', 'deployments:write',
];
export const WORKSPACE_ADMIN_PERMISSIONS: Permission[] = ['workspace:manage', ...WORKSPACE_DATA_PERMISSIONS, 'exports:manage'];
export const WORKSPACE_VIEWER_PERMISSIONS: Permission[] = ['workspace:read', 'runs:read', 'projects:read', 'datasets:read', 'deployments:read'];

export interface BuiltinRole {
  id: string;
  name: string;
  scope: 'organization' | 'workspace';
  permissions: Permission[];
  description: string;
}

/** Built-in roles, the same ids in every installation (seeded by the migration). */
export const BUILTIN_ROLES = {
  organizationAdmin: {
    id: '00000000-0000-4000-8000-000000000001',
    name: 'Organization Admin',
    scope: 'organization',
    // An organization admin also administers every workspace of the organization.
    permissions: ['organization:manage', 'organization:read', ...WORKSPACE_ADMIN_PERMISSIONS],
    description: 'Manages the organization, its members, workspaces and settings',
  },
  organizationOperator: {
    id: '00000000-0000-4000-8000-000000000002',
    name: 'Organization Operator',
    scope: 'organization',
    permissions: ['organization:manage', 'organization:read'],
    description: 'Manages the organization without access to workspace data',
  },
  organizationUser: {
    id: '00000000-0000-4000-8000-000000000003',
    name: 'Organization User',
    scope: 'organization',
    permissions: ['organization:read'],
    description: 'A member of the organization; workspace roles grant the rest',
  },
  workspaceAdmin: {
    id: '00000000-0000-4000-8000-000000000011',
    name: 'Workspace Admin',
    scope: 'workspace',
    permissions: WORKSPACE_ADMIN_PERMISSIONS,
    description: 'Manages the workspace: members, keys, secrets, retention and usage limits',
  },
  workspaceEditor: {
    id: '00000000-0000-4000-8000-000000000012',
    name: 'Workspace Editor',
    scope: 'workspace',
    permissions: WORKSPACE_DATA_PERMISSIONS,
    description: 'Reads and writes the workspace data',
  },
  workspaceViewer: {
    id: '00000000-0000-4000-8000-000000000013',
    name: 'Workspace Viewer',
    scope: 'workspace',
    permissions: WORKSPACE_VIEWER_PERMISSIONS,
    description: 'Reads the workspace data',
  },
} satisfies Record<string, BuiltinRole>;
