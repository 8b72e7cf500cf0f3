import { Catch, Controller, Injectable, Logger, UseFilters, applyDecorators, type INestApplication, type RpcExceptionFilter } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { BaseRpcContext, Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import { isObservable, lastValueFrom, throwError, type Observable } from 'rxjs';
import type { TopicName } from '@th/contracts';
import { EventBus, type BatchHooks, type BusMessage, type SubscribeOptions } from './bus';

/**
 * What a consumer declares beside its topic: `@EventPattern(TOPICS.runs, { groupId: 'ingest-writer', ... })`.
 * Each `@EventPattern` method is one consumer group that gets whole batches (a `BusMessage[]`).
 */
export interface ConsumerExtras extends Partial<SubscribeOptions> {
  groupId: string;
  /**
   * A provider (token) of the options only known at run time (settings, callbacks into a service);
   * merged over the declared ones when the consumer joins.
   */
  settings?: unknown;
  /**
   * Join in the background instead of holding up the start: for a consumer that only speeds things up
   * (a failure to join is logged, and the service runs without it).
   */
  background?: boolean;
}

/** The second argument of a consumer method (`@Ctx()`): the bus's hooks for the batch being handled. */
export class BusContext extends BaseRpcContext<[BatchHooks | undefined]> {
  /** See BatchHooks.writing: lets the in-process bus start the next batch while this one is written. */
  writing(): void {
    this.args[0]?.writing();
  }
}

/**
 * Nest's RPC exception filter turns any error into a generic `{ status, message }`; the bus must see the
 * original (a throw means "retry the batch", with the cause in its logs and in the publisher's error).
 */
@Catch()
export class BusExceptionFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown): Observable<never> {
    return throwError(() => exception);
  }
}

/** Marks a class whose `@EventPattern` methods consume the bus (a controller with the bus's error handling). */
export const BusConsumer = (): ClassDecorator => applyDecorators(Controller(), UseFilters(BusExceptionFilter));

interface Registered {
  topic: TopicName;
  handler: MessageHandler;
  extras: ConsumerExtras;
}

/**
 * The bus (Kafka or in process) as a Nest transport: every `@EventPattern(topic, { groupId })` method of
 * the app's controllers becomes a subscription. The bus keeps its guarantees: batches, offsets committed
 * after the handler resolves, rejections dead-lettered with their reason, a throw retried.
 */
@Injectable()
export class BusTransport extends Server implements CustomTransportStrategy {
  private readonly log = new Logger('bus-transport');
  private readonly consumers: Registered[] = [];

  constructor(
    private readonly bus: EventBus,
    private readonly moduleRef: ModuleRef,
  ) {
    super();
  }

  /** One subscription per method: two groups on one topic stay two groups (Nest would chain them into one). */
  override addHandler(pattern: unknown, callback: MessageHandler, isEventHandler = false, extras: Record<string, unknown> = {}): void {
    if (!isEventHandler) throw new Error(`the bus carries events only: use @EventPattern, not @MessagePattern (${String(pattern)})`);
    if (typeof pattern !== 'string' || typeof extras.groupId !== 'string') throw new Error(`@EventPattern(topic, { groupId }) expected, got ${JSON.stringify(pattern)}`);
    this.consumers.push({ topic: pattern as TopicName, handler: callback, extras: extras as unknown as ConsumerExtras });
  }

  async listen(callback: (err?: unknown) => void): Promise<void> {
    try {
      const joins = this.consumers.map((c) => this.join(c));
      await Promise.all(joins);
      callback();
    } catch (err) {
      callback(err);
    }
  }

  private async join({ topic, handler, extras }: Registered): Promise<void> {
    const { settings, background, ...declared } = extras;
    const opts: SubscribeOptions = { ...declared, ...(settings ? this.moduleRef.get<Partial<SubscribeOptions>>(settings as string, { strict: false }) : {}) };
    const joined = this.bus.subscribe(topic, opts, async (batch: BusMessage<unknown>[], hooks?: BatchHooks) => {
      const out: unknown = await handler(batch, new BusContext([hooks]));
      return (isObservable(out) ? await lastValueFrom(out, { defaultValue: undefined }) : out) as Awaited<ReturnType<Parameters<EventBus['subscribe']>[2]>>;
    });
    if (!background) return joined;
    joined.catch((err: unknown) => this.log.warn({ msg: 'consumer not joined, running without it', topic, group: opts.groupId, error: err instanceof Error ? err.message : String(err) }));
  }

  /** Consumers stop with the bus (BusModule closes it at shutdown, after their in-flight batches are committed). */
  close(): void {}

  on(): never {
    throw new Error('the bus transport has no events to listen to');
  }

  unwrap<T>(): T {
    return this.bus as T;
  }
}

/**
 * Starts the app's bus consumers: after the app's init hooks (a consumer may get messages at once, e.g.
 * from the standalone log) and before it listens for HTTP. Call it where the app is created.
 */
export async function startBusConsumers(app: INestApplication): Promise<void> {
  await app.init();
  app.connectMicroservice({ strategy: app.get(BusTransport) });
  await app.startAllMicroservices();
}
