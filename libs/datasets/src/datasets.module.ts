import { DynamicModule, Module } from '@nestjs/common';
import { AuditPublisher } from '@th/audit-client';
import { DataSource } from 'typeorm';
import { CsvUploadController } from './csv-upload';
import { DatasetsController, PublicDatasetsController } from './datasets.controller';
import { DatasetsService } from './datasets.service';
import { DatasetsStore } from './datasets.store';
import { AttachmentDownloadController, ExamplesController, PlatformExamplesController } from './examples.controller';
import { ExamplesService } from './examples.service';
import { ExampleSchemaValidator } from './schema-validator';

export const DATASETS_DATA_SOURCE = Symbol('DATASETS_DATA_SOURCE');

/** Datasets and examples (own PostgreSQL schema `datasets`). Needs EventBus/AuditPublisher from the host (BusModule). */
@Module({})
export class DatasetsModule {
  static forRoot(dataSource: DataSource): DynamicModule {
    return {
      module: DatasetsModule,
      controllers: [CsvUploadController, DatasetsController, PublicDatasetsController, ExamplesController, PlatformExamplesController, AttachmentDownloadController],
      providers: [
        { provide: DATASETS_DATA_SOURCE, useValue: dataSource },
        { provide: DatasetsStore, useFactory: () => new DatasetsStore(dataSource) },
        { provide: ExampleSchemaValidator, useFactory: () => new ExampleSchemaValidator() },
        { provide: DatasetsService, inject: [DatasetsStore, ExampleSchemaValidator, AuditPublisher], useFactory: (s: DatasetsStore, v: ExampleSchemaValidator, a: AuditPublisher) => new DatasetsService(s, v, a) },
        { provide: ExamplesService, inject: [DatasetsStore, ExampleSchemaValidator, AuditPublisher], useFactory: (s: DatasetsStore, v: ExampleSchemaValidator, a: AuditPublisher) => new ExamplesService(s, v, a) },
      ],
      exports: [DatasetsService, ExamplesService, DATASETS_DATA_SOURCE],
    };
  }
}
