import { DynamicModule, Module } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { AUDIT_OPTIONS, type AuditOptions } from './audit.options';
import { ChainHasher } from './chain/chain-hash';
import { AuditLogsController } from './logs/audit-logs.controller';
import { AuditLogsService } from './logs/audit-logs.service';
import { AuditRetentionService } from './retention/audit-retention.service';
import { AuditConsumer } from './store/audit.consumer';
import { AuditRepository } from './store/audit.repository';
import { AuditStore } from './store/audit-store.service';

/**
 * The audit service: consumes the `audit` topic into an append-only, hash-chained store (PostgreSQL
 * schema `audit`), serves GET /api/v1/audit-logs and its chain check, and removes expired events.
 * Needs EventBus from the host, and its own DataSource.
 */
@Module({})
export class AuditModule {
  static forRoot(dataSource: DataSource, options: AuditOptions): DynamicModule {
    return {
      module: AuditModule,
      controllers: [AuditLogsController, AuditConsumer],
      providers: [
        { provide: AUDIT_OPTIONS, useValue: options },
        { provide: AuditRepository, useValue: new AuditRepository(dataSource) },
        { provide: ChainHasher, useValue: new ChainHasher(options.chainKey) },
        { provide: AuditStore, inject: [AuditRepository, ChainHasher], useFactory: (repo: AuditRepository, hasher: ChainHasher) => new AuditStore(repo, hasher) },
        AuditRetentionService,
        AuditLogsService,
      ],
      exports: [AuditLogsService, AuditRetentionService, AuditStore, ChainHasher],
    };
  }
}
