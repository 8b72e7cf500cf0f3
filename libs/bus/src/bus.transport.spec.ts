import { Module, type INestApplication, type Provider, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { HealthModule } from '@th/platform';
import { TOPICS, type RunEvent, type TopicPayload } from '@th/contracts';
import type { BusMessage, Rejection } from './bus';
import { BusModule } from './bus.module';
import { BusConsumer, BusContext, startBusConsumers, type ConsumerExtras } from './bus.transport';
import { InProcessBus } from './in-process.bus';

type Runs = BusMessage<TopicPayload<'runs'>>[];
const event = (id: string): RunEvent => ({ kind: 'run', op: 'post', tenant_id: 't', id, received_at: '2026-11-24T00:00:00.000Z', fields: { name: id } });
const ids = (batch: Runs) => batch.map((m) => (m.value as RunEvent).id);
const publish = (bus: InProcessBus, ...names: string[]) => bus.publish(TOPICS.runs, names.map((id) => ({ key: id, value: event(id) })));
const gate = () => {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open: () => open() };
};

/** What the consumers below saw, shared with the spec. */
const seen = { a: [] as string[][], b: [] as string[][], failures: 0, hold: null as ReturnType<typeof gate> | null };
const SETTINGS = Symbol('SETTINGS');

@BusConsumer()
class RunsConsumer {
  /** Batches; rejects ids starting with "bad"; throws `failures` times before it succeeds. */
  @EventPattern(TOPICS.runs, { groupId: 'a', concurrency: 2, settings: SETTINGS } satisfies ConsumerExtras)
  async a(@Payload() batch: Runs, @Ctx() ctx: BusContext): Promise<{ rejected: Rejection<TopicPayload<'runs'>>[] }> {
    if (seen.failures > 0) {
      seen.failures--;
      throw new Error('disk full');
    }
    seen.a.push(ids(batch));
    const hold = seen.hold;
    seen.hold = null;
    ctx.writing();
    await hold?.wait;
    return { rejected: batch.filter((m) => ids([m])[0].startsWith('bad')).map((message) => ({ message, reason: 'bad id' })) };
  }

  @EventPattern(TOPICS.runs, { groupId: 'b' } satisfies ConsumerExtras)
  b(@Payload() batch: Runs): void {
    seen.b.push(ids(batch));
  }
}

async function start(bus: InProcessBus, consumers: Type<unknown>[], providers: Provider[] = []): Promise<INestApplication> {
  @Module({ imports: [HealthModule, BusModule.forRoot({ instance: bus })], controllers: consumers, providers })
  class AppModule {}
  const app = await NestFactory.create(AppModule, { logger: false, abortOnError: false });
  await startBusConsumers(app);
  return app;
}

/** @EventPattern consumers on the real in-process bus, through the bus's Nest transport. */
describe('bus transport', () => {
  let bus: InProcessBus;
  let app: INestApplication;

  beforeAll(async () => {
    bus = new InProcessBus();
    app = await start(bus, [RunsConsumer], [{ provide: SETTINGS, useValue: { maxBatchSize: 3 } }]);
  });
  afterAll(async () => {
    await app.close(); // closes the bus too
  });
  beforeEach(() => {
    seen.a = [];
    seen.b = [];
  });

  it('hands each group whole batches, sized by the options a provider supplies at run time', async () => {
    await publish(bus, 'r1', 'r2', 'r3', 'r4', 'r5');
    expect(seen.a).toEqual([
      ['r1', 'r2', 'r3'],
      ['r4', 'r5'],
    ]);
    // The second method on the same topic is a group of its own, with the default batch size.
    expect(seen.b).toEqual([['r1', 'r2', 'r3', 'r4', 'r5']]);
  });

  it('dead-letters what the handler rejects, and the rest of the batch is done', async () => {
    const before = bus.recentDeadLetters().length;
    await publish(bus, 'ok1', 'bad1', 'ok2');
    const dead = bus.recentDeadLetters().slice(before);
    expect(dead.map((m) => (m.value as RunEvent).id)).toEqual(['bad1']);
    expect(seen.a.flat()).toEqual(['ok1', 'bad1', 'ok2']);
  });

  it('retries a batch whose handler throws; the bus sees the handler\'s own error, not a generic one', async () => {
    seen.failures = 1;
    await publish(bus, 'retried');
    expect(seen.a).toEqual([['retried']]);
    seen.failures = 100;
    const failed = publish(bus, 'never');
    await expect(failed).rejects.toMatchObject({ code: 'unavailable', cause: expect.objectContaining({ message: 'disk full' }) });
    seen.failures = 0;
  }, 20_000);

  it('passes the bus hooks: once a batch is writing, the next one is handled meanwhile', async () => {
    const hold = gate();
    seen.hold = hold;
    const first = publish(bus, 'slow');
    for (let i = 0; i < 200 && seen.a.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    await publish(bus, 'overtakes');
    expect(seen.a).toEqual([['slow'], ['overtakes']]);
    hold.open();
    await first;
  });

  it('refuses request-response handlers: the bus carries events only', async () => {
    @BusConsumer()
    class Rpc {
      @MessagePattern(TOPICS.runs)
      ask(): string {
        return 'no';
      }
    }
    const other = new InProcessBus();
    await expect(start(other, [Rpc])).rejects.toThrow(/events only/);
    await other.close();
  });
});
