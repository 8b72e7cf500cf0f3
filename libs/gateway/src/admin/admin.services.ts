import type { Provider } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { EventBus } from '@th/bus';
import { IdentityService } from '../identity/identity.service';
import { AdminStore, type AdminOptions } from './admin-store';
import { CredentialsService } from './credentials.service';
import { OrgMembersService } from './org-members.service';
import { OrganizationService } from './organization.service';
import { RolesService } from './roles.service';
import { SessionsService } from './sessions.service';
import { WorkspaceLimitsService } from './workspace-limits.service';
import { WorkspaceMembersService } from './workspace-members.service';
import { WorkspaceSecretsService } from './workspace-secrets.service';
import { WorkspacesService } from './workspaces.service';

/** One service per administered resource, over one shared store. */
export function createAdminServices(ds: DataSource, identities: IdentityService, opts: AdminOptions, bus: EventBus | null = null) {
  const store = new AdminStore(ds, identities);
  return {
    roles: new RolesService(store),
    credentials: new CredentialsService(store),
    sessions: new SessionsService(store, opts),
    organization: new OrganizationService(store),
    workspaces: new WorkspacesService(store, bus),
    orgMembers: new OrgMembersService(store, opts),
    workspaceMembers: new WorkspaceMembersService(store),
    secrets: new WorkspaceSecretsService(store, opts),
    limits: new WorkspaceLimitsService(store),
  };
}
export type AdminServices = ReturnType<typeof createAdminServices>;

const ADMIN_SERVICES = Symbol('ADMIN_SERVICES');

/** The module's providers: each service injectable by its class. */
export function adminProviders(ds: DataSource, opts: AdminOptions): Provider[] {
  const pick = <K extends keyof AdminServices>(cls: abstract new (...args: never[]) => AdminServices[K], key: K): Provider => ({
    provide: cls,
    inject: [ADMIN_SERVICES],
    useFactory: (all: AdminServices) => all[key],
  });
  return [
    { provide: ADMIN_SERVICES, inject: [IdentityService, EventBus], useFactory: (ids: IdentityService, bus: EventBus) => createAdminServices(ds, ids, opts, bus) },
    pick(RolesService, 'roles'),
    pick(CredentialsService, 'credentials'),
    pick(SessionsService, 'sessions'),
    pick(OrganizationService, 'organization'),
    pick(WorkspacesService, 'workspaces'),
    pick(OrgMembersService, 'orgMembers'),
    pick(WorkspaceMembersService, 'workspaceMembers'),
    pick(WorkspaceSecretsService, 'secrets'),
    pick(WorkspaceLimitsService, 'limits'),
  ];
}
