import { Logger } from '@nestjs/common';
import type { TopicName, TopicPayload } from '@th/contracts';
import { DomainError, ErrorCode } from '@th/platform';
import { BatchHandler, BusMessage, EventBus, OutgoingMessage, SubscribeOptions, deadLetterTopic } from './bus';

interface Pending {
  message: BusMessage<unknown>;
  done: () => void;
  fail: (err: Error) => void;
}

interface Subscription {
  topic: string;
  groupId: string;
  maxBatchSize: number;
  handler: BatchHandler<unknown>;
  queue: Pending[];
  /** Handler invocations in flight. */
  running: number;
  concurrency: number;
  parallelBacklog: number;
}

const MAX_ATTEMPTS = 6;
/**
 * A second (third...) concurrent handler starts only for a backlog of this many messages (or a full
 * batch): while one handler is busy, small publishes queue up and are handed over together, so the
 * writer makes few large inserts instead of many small ones (each a ClickHouse part to merge later).
 */
const DEFAULT_PARALLEL_BACKLOG = 2_000;

/**
 * The standalone bus: same topics and payloads, no broker. A publish resolves only after every
 * subscribed group has handled the message, so a 2xx still means "written". Messages that queue up
 * while a handler is busy are handed over together: the writer gets group commits for free.
 */
export class InProcessBus extends EventBus {
  private readonly logger = new Logger('bus');
  private readonly subs = new Map<string, Subscription[]>();
  private closed = false;
  private readonly deadLetters: BusMessage<unknown>[] = [];

  async publish<T extends TopicName>(topic: T, messages: OutgoingMessage<TopicPayload<T>>[]): Promise<void> {
    if (this.closed) throw new DomainError(ErrorCode.Unavailable, 'bus is closed');
    const subs = this.subs.get(topic) ?? [];
    if (subs.length === 0 || messages.length === 0) return;
    // One promise per subscribed group (not per message): it resolves when the group has handled every message.
    const all: Promise<void>[] = [];
    for (const sub of subs) {
      all.push(
        new Promise<void>((resolve, reject) => {
          let remaining = messages.length;
          let settled = false;
          const done = () => {
            if (--remaining === 0 && !settled) {
              settled = true;
              resolve();
            }
          };
          const fail = (err: Error) => {
            if (!settled) {
              settled = true;
              reject(err);
            }
          };
          for (const m of messages) {
            sub.queue.push({ message: { topic, key: m.key, value: m.value, partition: null, offset: null, headers: m.headers ?? {} }, done, fail });
          }
        }),
      );
      void this.pump(sub);
    }
    await (all.length === 1 ? all[0] : Promise.all(all));
  }

  async subscribe<T extends TopicName>(topic: T, opts: SubscribeOptions, handler: BatchHandler<TopicPayload<T>>): Promise<void> {
    const list = this.subs.get(topic) ?? [];
    list.push({
      topic,
      groupId: opts.groupId,
      maxBatchSize: opts.maxBatchSize ?? 10_000,
      handler: handler as BatchHandler<unknown>,
      queue: [],
      running: 0,
      concurrency: Math.max(1, opts.concurrency ?? 1),
      parallelBacklog: Math.max(1, opts.parallelBacklog ?? DEFAULT_PARALLEL_BACKLOG),
    });
    this.subs.set(topic, list);
  }

  private async pump(sub: Subscription): Promise<void> {
    if (sub.running >= sub.concurrency) return;
    if (sub.running > 0 && sub.queue.length < Math.min(sub.parallelBacklog, sub.maxBatchSize)) return; // the busy handler takes them next
    sub.running++;
    try {
      // Yield once so that concurrent publishers land in the same batch.
      await new Promise((r) => setImmediate(r));
      while (sub.queue.length > 0) {
        const batch = sub.queue.splice(0, sub.maxBatchSize);
        // More is waiting: let another worker take it while this batch is handled.
        if (sub.queue.length > 0) void this.pump(sub);
        await this.deliver(sub, batch);
      }
    } finally {
      sub.running--;
    }
  }

  private async deliver(sub: Subscription, batch: Pending[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await sub.handler(batch.map((p) => p.message));
        for (const r of result?.rejected ?? []) {
          this.logger.warn({ msg: 'message dead-lettered', topic: sub.topic, dlq: deadLetterTopic(sub.topic), reason: r.reason });
          this.deadLetters.push(r.message);
          if (this.deadLetters.length > 1000) this.deadLetters.shift();
        }
        for (const p of batch) p.done();
        return;
      } catch (err) {
        if (attempt >= MAX_ATTEMPTS || this.closed) {
          this.logger.error({ msg: 'batch failed', topic: sub.topic, group: sub.groupId, error: String(err) });
          const failure = new DomainError(ErrorCode.Unavailable, 'storage is unavailable, retry later', undefined, { cause: err });
          for (const p of batch) p.fail(failure);
          return;
        }
        await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
      }
    }
  }

  /** The last dead-lettered messages (standalone keeps them in memory and in the log). */
  recentDeadLetters(): BusMessage<unknown>[] {
    return [...this.deadLetters];
  }

  async close(): Promise<void> {
    this.closed = true;
    for (let i = 0; i < 200; i++) {
      const busy = [...this.subs.values()].flat().some((s) => s.running > 0 || s.queue.length > 0);
      if (!busy) return;
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async healthy(): Promise<void> {
    if (this.closed) throw new Error('bus closed');
  }
}
