import { DynamicModule, Module } from '@nestjs/common';
import { IngestController } from './ingest.controller';
import { IngestService } from './ingest.service';
import { RunWriterService } from './run-writer.service';
import { RUN_WRITER_SETTINGS, RunWriterConsumer } from './run-writer.consumer';
import { INGEST_OPTIONS, type IngestOptions } from './ingest.options';
import { PriceMapController } from './price-map/price-map.controller';
import { OtelController } from './otel/otel.controller';
import { OtelService } from './otel/otel.service';
import { PriceMapRepository } from './price-map/price-map.repository';
import { PriceMapService } from './price-map/price-map.service';

/**
 * Every tracing write. Needs EventBus, ClickHouse and ProjectDirectory from the host module.
 * With `writer: true` this process also consumes the runs topic and writes ClickHouse.
 */
@Module({})
export class IngestModule {
  static forRoot(options: IngestOptions): DynamicModule {
    return {
      module: IngestModule,
      controllers: [IngestController, PriceMapController, OtelController, ...(options.writer ? [RunWriterConsumer] : [])],
      providers: [
        { provide: INGEST_OPTIONS, useValue: options },
        IngestService,
        RunWriterService,
        { provide: RUN_WRITER_SETTINGS, inject: [RunWriterService], useFactory: (writer: RunWriterService) => writer.consumerSettings() },
        PriceMapRepository,
        PriceMapService,
        OtelService,
      ],
      exports: [IngestService, RunWriterService],
    };
  }
}
