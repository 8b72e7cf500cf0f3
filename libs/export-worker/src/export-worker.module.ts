import { DynamicModule, Module } from '@nestjs/common';
import { ClickHouse } from '@th/clickhouse';
import { OutboundPolicy } from '@th/platform';
import { BulkExportsController } from './bulk-exports.controller';
import { DestinationsService } from './destinations/destinations.service';
import { EXPORT_DEFAULTS, EXPORT_WORKER_OPTIONS, type ExportWorkerOptions } from './export-worker.options';
import { ExportsRepository } from './exports.repository';
import { BulkExportsService } from './jobs/bulk-exports.service';
import { ExportRunner } from './jobs/export-runner';
import { ExportWorkerService } from './jobs/export-worker.service';
import { ExportWakeupConsumer } from './jobs/export-wakeup.consumer';
import { CredentialsCipher } from './storage/credentials-cipher';

export type ExportWorkerModuleOptions = Pick<ExportWorkerOptions, 'dataSource' | 'encryptionKey'> &
  Partial<Omit<ExportWorkerOptions, 'dataSource' | 'encryptionKey'>>;

/**
 * The export-worker service: bulk-export destinations and jobs over HTTP, and the worker role that
 * writes runs from ClickHouse to object storage as Parquet. Needs ClickHouse and EventBus from the host.
 */
@Module({})
export class ExportWorkerModule {
  static forRoot(options: ExportWorkerModuleOptions): DynamicModule {
    const opts: ExportWorkerOptions = { worker: true, ...EXPORT_DEFAULTS, ...stripUndefined(options), dataSource: options.dataSource, encryptionKey: options.encryptionKey };
    return {
      module: ExportWorkerModule,
      controllers: [BulkExportsController, ...(opts.worker ? [ExportWakeupConsumer] : [])],
      providers: [
        { provide: EXPORT_WORKER_OPTIONS, useValue: opts },
        { provide: ExportsRepository, useFactory: () => new ExportsRepository(opts.dataSource) },
        { provide: CredentialsCipher, useFactory: () => new CredentialsCipher(opts.encryptionKey) },
        { provide: OutboundPolicy, useValue: new OutboundPolicy(opts.outboundAllowedHosts) },
        {
          provide: ExportRunner,
          inject: [ClickHouse, ExportsRepository, CredentialsCipher, OutboundPolicy],
          useFactory: (ch: ClickHouse, repo: ExportsRepository, cipher: CredentialsCipher, outbound: OutboundPolicy) =>
            new ExportRunner(ch, repo, cipher, {
              outbound,
              rowsPerFile: opts.rowsPerFile,
              rowGroupRows: opts.rowGroupRows,
              rowGroupBytes: opts.rowGroupBytes,
              leaseMs: opts.leaseMs,
              compression: opts.compression,
            }),
        },
        DestinationsService,
        BulkExportsService,
        ExportWorkerService,
      ],
      exports: [ExportWorkerService],
    };
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
