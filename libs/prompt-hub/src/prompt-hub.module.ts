import { DynamicModule, Module, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { AuditPublisher } from '@th/audit-client';
import { OutboundPolicy, SecretCipher } from '@th/platform';
import type { DataSource } from 'typeorm';
import { HubDirectoriesController, PromptCommitsController, PromptLikesController, PromptReposController, PromptWebhooksController } from './prompt-hub.controller';
import { PromptHubRepository } from './prompt-hub.repository';
import { PromptHubService } from './prompt-hub.service';
import { DEFAULT_DELIVERY_OPTIONS, PromptWebhookDispatcher, PromptWebhookSender, type PromptWebhookDeliveryOptions } from './prompt-webhook.delivery';
import { PromptWebhooksRepository } from './prompt-webhooks.repository';
import { PromptWebhooksService } from './prompt-webhooks.service';
import { WebhookOutboxRepository } from './webhook-outbox.repository';
import { WorkspaceHandlesConsumer } from './workspace-handles.consumer';

export interface PromptHubOptions {
  /** Key material of the cipher that seals webhook secrets and headers (PROMPT_WEBHOOK_SECRETS_KEY). */
  secretsKey: string;
  /** OUTBOUND_ALLOWED_HOSTS: private hosts webhooks may reach. */
  outboundAllowedHosts: string;
  delivery?: Partial<PromptWebhookDeliveryOptions>;
}

/** Sends staged webhook deliveries while the app runs; on shutdown waits for the POSTs under way. */
class DispatcherLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(private readonly dispatcher: PromptWebhookDispatcher) {}
  onApplicationBootstrap(): void {
    this.dispatcher.start();
  }
  onApplicationShutdown(): Promise<void> {
    return this.dispatcher.close();
  }
}

/** The prompt hub (own PostgreSQL schema `prompt_hub`). Needs AuditPublisher from the host (BusModule). */
@Module({})
export class PromptHubModule {
  static forRoot(dataSource: DataSource, opts: PromptHubOptions): DynamicModule {
    const delivery = { ...DEFAULT_DELIVERY_OPTIONS, ...opts.delivery };
    const policy = new OutboundPolicy(opts.outboundAllowedHosts);
    const sender = new PromptWebhookSender(policy, delivery.timeoutMs);
    let dispatcher: PromptWebhookDispatcher | null = null;
    return {
      module: PromptHubModule,
      controllers: [PromptReposController, PromptCommitsController, PromptLikesController, PromptWebhooksController, HubDirectoriesController, WorkspaceHandlesConsumer],
      providers: [
        {
          provide: PromptWebhooksService,
          inject: [AuditPublisher],
          useFactory: (a: AuditPublisher) => {
            const webhooks = new PromptWebhooksService(new PromptWebhooksRepository(dataSource), new SecretCipher(opts.secretsKey), policy, sender, a, delivery.maxPendingPerTenant, () => dispatcher?.kick());
            dispatcher = new PromptWebhookDispatcher(new WebhookOutboxRepository(dataSource), sender, (t, id) => webhooks.target(t, id), delivery);
            return webhooks;
          },
        },
        { provide: PromptWebhookDispatcher, inject: [PromptWebhooksService], useFactory: () => dispatcher },
        { provide: DispatcherLifecycle, inject: [PromptWebhookDispatcher], useFactory: (d: PromptWebhookDispatcher) => new DispatcherLifecycle(d) },
        { provide: PromptHubRepository, useFactory: () => new PromptHubRepository(dataSource) },
        {
          provide: PromptHubService,
          inject: [PromptHubRepository, AuditPublisher, PromptWebhooksService],
          useFactory: (r: PromptHubRepository, a: AuditPublisher, w: PromptWebhooksService) => new PromptHubService(r, a, w),
        },
      ],
      exports: [PromptHubService],
    };
  }
}
