import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { z } from 'zod';
import { AuthGuard, IDENTITY_RESOLVER, INTERNAL_SIGNING_KEY, SignedHeaderIdentityResolver } from '@th/auth';
import { clusterServiceConfigShape, loadConfig, port } from '@th/config';
import { HealthModule, createHttpApp, listen, runUntilSignal } from '@th/platform';
import { EventBus } from './bus';
import { BusModule } from './bus.module';
import { kafkaOptionsFromConfig } from './kafka.bus';

/**
 * Runs a service that talks to the others only over Kafka (and the gateway's signed identity):
 * health endpoints, the bus joined at boot, and the service's own domain module.
 */
export function runBusService(name: string, defaultPort: number, domain: Type<unknown> | DynamicModule): void {
  runUntilSignal(name, async () => {
    const config = loadConfig(z.object({ ...clusterServiceConfigShape, PORT: port(defaultPort) }), process.env);
    @Module({
      imports: [
        HealthModule,
        BusModule.forRoot({ kafka: kafkaOptionsFromConfig(config, name), service: name }),
        domain,
      ],
      providers: [
        { provide: INTERNAL_SIGNING_KEY, useValue: config.INTERNAL_SIGNING_KEY },
        { provide: IDENTITY_RESOLVER, useClass: SignedHeaderIdentityResolver },
        { provide: APP_GUARD, useClass: AuthGuard },
      ],
    })
    class ServiceModule {}
    const app = await createHttpApp(ServiceModule, { service: name, logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES });
    await app.get(EventBus).healthy(); // joins the bus: topics exist, producer connected
    return listen(app, config.HOST, config.PORT);
  });
}
