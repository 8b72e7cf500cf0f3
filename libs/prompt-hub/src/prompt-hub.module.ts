import { DynamicModule, Module } from '@nestjs/common';
import { AuditPublisher } from '@th/bus';
import type { DataSource } from 'typeorm';
import { HubSettingsController, PromptCommitsController, PromptLikesController, PromptReposController } from './prompt-hub.controller';
import { PromptHubRepository } from './prompt-hub.repository';
import { PromptHubService } from './prompt-hub.service';

/** The prompt hub (own PostgreSQL schema `prompt_hub`). Needs AuditPublisher from the host (BusModule). */
@Module({})
export class PromptHubModule {
  static forRoot(dataSource: DataSource): DynamicModule {
    return {
      module: PromptHubModule,
      controllers: [PromptReposController, PromptCommitsController, PromptLikesController, HubSettingsController],
      providers: [
        { provide: PromptHubRepository, useFactory: () => new PromptHubRepository(dataSource) },
        { provide: PromptHubService, inject: [PromptHubRepository, AuditPublisher], useFactory: (r: PromptHubRepository, a: AuditPublisher) => new PromptHubService(r, a) },
      ],
      exports: [PromptHubService],
    };
  }
}
