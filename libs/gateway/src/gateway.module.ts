import { DynamicModule, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { HealthRegistry } from '@th/platform';
import { GATEWAY_INFO_OPTIONS, InfoController, type GatewayInfoOptions } from './info.controller';
import { OpenApiController } from './openapi/openapi.controller';
import { IdentityService, type IdentityOptions } from './identity/identity.service';
import type { AdminOptions } from './admin/admin-store';
import { adminProviders } from './admin/admin.services';
import { AdminAudit } from './admin/admin-audit';
import { ApiKeysController, AuthController, ServiceKeysController } from './admin/credentials.controller';
import { OrgMembersController, PendingInvitationsController, WorkspacesController } from './admin/organization.controller';
import { CurrentWorkspaceController, UsageLimitsController } from './admin/workspace-settings.controller';
import { HubSettingsController } from './admin/hub-settings.controller';

export interface GatewayModuleOptions {
  identity?: IdentityOptions;
  /** Share this resolver (e.g. with the cluster proxy) so admin writes invalidate its cache too. */
  identityService?: IdentityService;
  /** Lifetime of session bearer tokens; default 12 hours. */
  sessionTtlSeconds?: number;
  /** Key material of workspace secret values at rest (WORKSPACE_SECRETS_KEY). */
  workspaceSecretsKey: string;
}

/**
 * Identity, the administration endpoints, /info, /ok and the OpenAPI document. Needs its own
 * DataSource (schema `gateway`) and the bus (AuditPublisher) for the tracked operations.
 */
@Module({})
export class GatewayModule {
  static forRoot(dataSource: DataSource, info: GatewayInfoOptions, opts: GatewayModuleOptions): DynamicModule {
    const admin: AdminOptions = {
      sessionSecret: opts.identity?.sessionSecret,
      sessionTtlSeconds: opts.sessionTtlSeconds ?? 12 * 3600,
      workspaceSecretsKey: opts.workspaceSecretsKey,
    };
    return {
      module: GatewayModule,
      controllers: [
        InfoController,
        OpenApiController,
        ApiKeysController,
        ServiceKeysController,
        AuthController,
        WorkspacesController,
        OrgMembersController,
        PendingInvitationsController,
        CurrentWorkspaceController,
        UsageLimitsController,
        HubSettingsController,
      ],
      providers: [
        { provide: GATEWAY_INFO_OPTIONS, useValue: info },
        {
          provide: IdentityService,
          inject: [HealthRegistry],
          useFactory: (health: HealthRegistry) => {
            const svc = opts.identityService ?? new IdentityService(dataSource, opts.identity);
            health.register({ name: 'postgres', check: () => svc.ping() });
            return svc;
          },
        },
        ...adminProviders(dataSource, admin),
        AdminAudit,
      ],
      exports: [IdentityService],
    };
  }
}
