import { DynamicModule, Module, type OnApplicationShutdown } from '@nestjs/common';
import { AuditPublisher } from '@th/audit-client';
import { OutboundPolicy, SecretCipher } from '@th/platform';
import type { DataSource } from 'typeorm';
import { HubDirectoriesController, HubSettingsController, PromptCommitsController, PromptLikesController, PromptReposController, PromptWebhooksController } from './prompt-hub.controller';
import { PromptHubRepository } from './prompt-hub.repository';
import { PromptHubService } from './prompt-hub.service';
import { DEFAULT_DELIVERY_OPTIONS, PromptWebhookDelivery, type PromptWebhookDeliveryOptions } from './prompt-webhook.delivery';
import { PromptWebhooksRepository } from './prompt-webhooks.repository';
import { PromptWebhooksService } from './prompt-webhooks.service';

export interface PromptHubOptions {
  /** Key material of the cipher that seals webhook secrets and headers (PROMPT_WEBHOOK_SECRETS_KEY). */
  secretsKey: string;
  /** OUTBOUND_ALLOWED_HOSTS: private hosts webhooks may reach. */
  outboundAllowedHosts: string;
  delivery?: Partial<PromptWebhookDeliveryOptions>;
}

/** Waits for webhook deliveries under way when the app shuts down. */
class DeliveryCloser implements OnApplicationShutdown {
  constructor(private readonly delivery: PromptWebhookDelivery) {}
  onApplicationShutdown(): Promise<void> {
    return this.delivery.close();
  }
}

/** The prompt hub (own PostgreSQL schema `prompt_hub`). Needs AuditPublisher from the host (BusModule). */
@Module({})
export class PromptHubModule {
  static forRoot(dataSource: DataSource, opts: PromptHubOptions): DynamicModule {
    const delivery = new PromptWebhookDelivery(new OutboundPolicy(opts.outboundAllowedHosts), { ...DEFAULT_DELIVERY_OPTIONS, ...opts.delivery });
    return {
      module: PromptHubModule,
      controllers: [PromptReposController, PromptCommitsController, PromptLikesController, HubSettingsController, PromptWebhooksController, HubDirectoriesController],
      providers: [
        { provide: PromptWebhookDelivery, useValue: delivery },
        { provide: DeliveryCloser, useFactory: () => new DeliveryCloser(delivery) },
        {
          provide: PromptWebhooksService,
          inject: [AuditPublisher],
          useFactory: (a: AuditPublisher) => new PromptWebhooksService(new PromptWebhooksRepository(dataSource), new SecretCipher(opts.secretsKey), new OutboundPolicy(opts.outboundAllowedHosts), delivery, a),
        },
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
