import { Module, type INestApplication, type Provider, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { BusModule, startBusConsumers, type EventBus } from '@th/bus';
import { HealthModule } from '@th/platform';

/**
 * The given `@EventPattern` consumers joined to `bus` through the bus's Nest transport, as the apps do:
 * a spec tests a consumer on the real path (bus, transport, controller). Closing the app closes the bus.
 */
export async function startConsumers(bus: EventBus, consumers: Type<unknown>[], providers: Provider[]): Promise<INestApplication> {
  @Module({ imports: [HealthModule, BusModule.forRoot({ instance: bus })], controllers: consumers, providers })
  class ConsumersModule {}
  const app = await NestFactory.create(ConsumersModule, { logger: false, abortOnError: false });
  await startBusConsumers(app);
  return app;
}
