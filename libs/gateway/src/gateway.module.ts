import { DynamicModule, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { HealthRegistry } from '@th/platform';
import { GATEWAY_INFO_OPTIONS, InfoController, type GatewayInfoOptions } from './info.controller';
import { OpenApiController } from './openapi/openapi.controller';
import { IdentityService } from './identity/identity.service';

/** Identity, /info, /ok and the OpenAPI document. Needs its own DataSource (schema `gateway`). */
@Module({})
export class GatewayModule {
  static forRoot(dataSource: DataSource, info: GatewayInfoOptions): DynamicModule {
    return {
      module: GatewayModule,
      controllers: [InfoController, OpenApiController],
      providers: [
        { provide: GATEWAY_INFO_OPTIONS, useValue: info },
        {
          provide: IdentityService,
          inject: [HealthRegistry],
          useFactory: (health: HealthRegistry) => {
            const svc = new IdentityService(dataSource);
            health.register({ name: 'postgres', check: () => svc.ping() });
            return svc;
          },
        },
      ],
      exports: [IdentityService],
    };
  }
}
