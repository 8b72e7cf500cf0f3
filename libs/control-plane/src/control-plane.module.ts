import { Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { IDENTITY_RESOLVER, type IdentityResolver } from '@th/auth';
import type { DataSource } from 'typeorm';
import { CONTROL_PLANE_OPTIONS, type ControlPlaneOptions } from './control-plane.options';
import { DeploymentsController, UnversionedUploadUrlController, UploadsController } from './deployments/deployments.controller';
import { DeploymentsRepository } from './deployments/deployments.repository';
import { DeploymentsService } from './deployments/deployments.service';
import { IntegrationsController } from './integrations/integrations.controller';
import { IntegrationsRepository } from './integrations/integrations.repository';
import { IntegrationsService } from './integrations/integrations.service';
import { ListenersController } from './listeners/listeners.controller';
import { ListenersRepository } from './listeners/listeners.repository';
import { ControlPlaneMigration } from './migrations';
import { ControlPlaneOpenApiController } from './openapi/openapi.controller';
import { HealthRegistry, OutboundPolicy } from '@th/platform';
import { GatewayCallers, ResolverCallers } from './rollout/deployment-callers';
import { GitSource } from './rollout/git-source';
import { K8sDriver } from './rollout/k8s.driver';
import { LocalDriver } from './rollout/local.driver';
import { RolloutWorkerHandle } from './rollout/rollout-worker.handle';
import { RolloutWorker } from './rollout/rollout.worker';
import { SecretsCipher } from './secrets.cipher';
import { UploadsRepository } from './uploads/uploads.repository';

export const CONTROL_PLANE_SCHEMA = 'control_plane';
export const CONTROL_PLANE_ENTITIES: never[] = [];
export const CONTROL_PLANE_MIGRATIONS = [ControlPlaneMigration];
export const CONTROL_PLANE_DATA_SOURCE = Symbol('CONTROL_PLANE_DATA_SOURCE');

class OwnedDataSource implements OnApplicationShutdown {
  constructor(private readonly ds: DataSource | null) {}
  async onApplicationShutdown(): Promise<void> {
    if (this.ds?.isInitialized) await this.ds.destroy();
  }
}

/**
 * The deployment control plane ({control_plane_url}): deployments, revisions, listeners, integrations,
 * upload URLs, and the rollout worker with its local and Kubernetes drivers. Needs EventBus and AuditPublisher
 * (BusModule) from the host. `dataSource` is the `control_plane` schema's, or a factory that opens it (owned then).
 */
@Module({})
export class ControlPlaneModule {
  static forRoot(dataSource: DataSource | (() => Promise<DataSource>), opts: ControlPlaneOptions): DynamicModule {
    const owned = typeof dataSource === 'function';
    return {
      module: ControlPlaneModule,
      controllers: [DeploymentsController, UnversionedUploadUrlController, UploadsController, ListenersController, IntegrationsController, ControlPlaneOpenApiController],
      providers: [
        { provide: CONTROL_PLANE_OPTIONS, useValue: opts },
        { provide: CONTROL_PLANE_DATA_SOURCE, useFactory: () => (typeof dataSource === 'function' ? dataSource() : dataSource) },
        {
          provide: OwnedDataSource,
          inject: [CONTROL_PLANE_DATA_SOURCE, HealthRegistry],
          useFactory: (ds: DataSource, health: HealthRegistry) => {
            // Its own pool (the cluster form): readiness needs it; a host's pool is the host's to check.
            if (owned) health.register({ name: 'postgres', check: async () => void (await ds.query('SELECT 1')) });
            return new OwnedDataSource(owned ? ds : null);
          },
        },
        { provide: DeploymentsRepository, inject: [CONTROL_PLANE_DATA_SOURCE], useFactory: (ds: DataSource) => new DeploymentsRepository(ds) },
        { provide: ListenersRepository, inject: [CONTROL_PLANE_DATA_SOURCE], useFactory: (ds: DataSource) => new ListenersRepository(ds) },
        { provide: IntegrationsRepository, inject: [CONTROL_PLANE_DATA_SOURCE], useFactory: (ds: DataSource) => new IntegrationsRepository(ds) },
        { provide: UploadsRepository, inject: [CONTROL_PLANE_DATA_SOURCE], useFactory: (ds: DataSource) => new UploadsRepository(ds) },
        { provide: SecretsCipher, useValue: new SecretsCipher(opts.secretsKey) },
        { provide: GitSource, useValue: new GitSource(new OutboundPolicy(opts.outbound.allowedHosts), opts.outbound.allowLocalRepos) },
        {
          provide: RolloutWorkerHandle,
          inject: [CONTROL_PLANE_DATA_SOURCE, DeploymentsRepository, ListenersRepository, UploadsRepository, SecretsCipher, GitSource, ModuleRef],
          useFactory: (ds: DataSource, repo: DeploymentsRepository, listeners: ListenersRepository, uploads: UploadsRepository, cipher: SecretsCipher, git: GitSource, refs: ModuleRef) => {
            // Callers of deployment addresses: verified by the gateway (cluster) or the host app's own resolver (standalone).
            const resolver = (): IdentityResolver | null => {
              try {
                return refs.get<IdentityResolver>(IDENTITY_RESOLVER, { strict: false });
              } catch {
                return null;
              }
            };
            const callers = opts.callers.gatewayUrl ? new GatewayCallers(opts.callers.gatewayUrl) : new ResolverCallers(resolver);
            const local = new LocalDriver(opts.local, uploads, cipher, git, new OutboundPolicy(opts.outbound.allowedHosts), callers);
            const k8s = new K8sDriver({ readyTimeoutMs: opts.k8s.readyTimeoutMs, secretsKey: opts.secretsKey });
            const worker = opts.rolloutWorker ? new RolloutWorker(ds, repo, listeners, cipher, { local, k8s }, { pollMs: opts.rolloutPollMs, stopGraceMs: 5000, concurrency: opts.rolloutConcurrency }) : null;
            return new RolloutWorkerHandle(worker, [local, k8s]);
          },
        },
        DeploymentsService,
        IntegrationsService,
      ],
      exports: [DeploymentsService],
    };
  }
}
