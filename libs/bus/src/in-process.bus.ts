import { Logger } from '@nestjs/common';
import type { TopicName, TopicPayload } from '@th/contracts';
import { DomainError, ErrorCode, METRICS, onScrape, selfTracingOn, tracedConsume, tracedPublish } from '@th/platform';
import { BatchHandler, BusMessage, EventBus, OutgoingMessage, SubscribeOptions, deadLetterTopic } from './bus';
import { decodeRecord, DurableLog, encodeRecord, type LogRecord, type Segment } from './durable-log';

interface Pending {
  /** Set when queued, or (a logged message queued as its log line) when its batch is delivered. */
  message: BusMessage<unknown> | null;
  /**
   * A logged message waits as its log line, not as objects: the queue then holds one flat string per
   * message rather than an object graph that outlives a few young-generation collections and gets
   * promoted (most of the garbage collector's work under load).
   */
  line?: string;
  done: () => void;
  fail: (err: Error) => void;
  /** Already acknowledged from the log: retried until handled, never failed. */
  logged?: boolean;
}

interface Subscription {
  topic: string;
  groupId: string;
  maxBatchSize: number;
  handler: BatchHandler<unknown>;
  queue: Pending[];
  /** Handler invocations in flight. */
  running: number;
  /** Of those, the ones still in their in-memory work (not yet writing: see BatchHooks). */
  busy: number;
  concurrency: number;
  parallelBacklog: number;
}

const MAX_ATTEMPTS = 6;
/** Logged messages are retried until they are handled; waits between attempts grow to this. */
const MAX_RETRY_DELAY_MS = 5_000;

export interface InProcessBusOptions {
  /**
   * Topics acknowledged once written to a write-ahead log in this folder (fsynced) instead of once
   * handled: what Kafka's acknowledgement is in the cluster form. Records stay in the log until their
   * group has handled them and are handed over again after a restart.
   */
  log?: { dir: string; topics: readonly TopicName[]; maxBacklog?: number };
}

/** The pending message, decoded from its log line on first delivery. */
function messageOf(p: Pending): BusMessage<unknown> {
  if (p.message) return p.message;
  const r = decodeRecord(p.line!);
  p.line = undefined;
  return (p.message = { topic: r.topic, key: r.key, value: r.value, partition: null, offset: null, headers: r.headers });
}

/** Logged messages waiting to be handled before publishes of logged topics wait for room. */
const DEFAULT_MAX_BACKLOG = 100_000;
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
  private readonly log: DurableLog | null = null;
  private readonly loggedTopics = new Set<string>();
  /** Records a previous process logged and no group had handled, by topic, until their group subscribes. */
  private readonly recovered = new Map<string, { segment: Segment; record: LogRecord }[]>();
  private readonly maxBacklog: number;
  /** Logged messages not yet handled, and publishes waiting for that to fall below maxBacklog. */
  private backlog = 0;
  private readonly roomWaiters: (() => void)[] = [];
  /** Lag here is what waits in each group's queue (one partition, `0`). */
  private readonly removeScrapeHook = onScrape(async () => {
    for (const [topic, subs] of this.subs) for (const s of subs) METRICS.kafkaConsumerLag.set({ topic, partition: '0', group: s.groupId }, s.queue.length);
  });

  constructor(opts: InProcessBusOptions = {}) {
    super();
    this.maxBacklog = opts.log?.maxBacklog ?? DEFAULT_MAX_BACKLOG;
    if (opts.log) {
      const { log, recovered } = DurableLog.open(opts.log.dir);
      this.log = log;
      for (const t of opts.log.topics) this.loggedTopics.add(t);
      for (const { segment, records } of recovered) {
        for (const record of records) {
          const list = this.recovered.get(record.topic) ?? [];
          list.push({ segment, record });
          this.recovered.set(record.topic, list);
        }
      }
    }
  }

  async publish<T extends TopicName>(topic: T, messages: OutgoingMessage<TopicPayload<T>>[]): Promise<void> {
    if (this.closed) throw new DomainError(ErrorCode.Unavailable, 'bus is closed');
    if (selfTracingOn()) return tracedPublish(topic, messages.length, (trace) => this.publishNow(topic, messages.map((m) => ({ ...m, headers: { ...m.headers, ...trace } }))));
    return this.publishNow(topic, messages);
  }

  private async publishNow<T extends TopicName>(topic: T, messages: OutgoingMessage<TopicPayload<T>>[]): Promise<void> {
    if (this.log && this.loggedTopics.has(topic)) return this.publishLogged(topic, messages);
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

  /** Resolves once the messages are on disk; each subscribed group handles them after that. */
  private async publishLogged<T extends TopicName>(topic: T, messages: OutgoingMessage<TopicPayload<T>>[]): Promise<void> {
    if (messages.length === 0) return;
    // Bounded: a consumer that falls behind slows publishers down instead of filling the memory.
    while (this.backlog >= this.maxBacklog && !this.closed) await new Promise<void>((r) => this.roomWaiters.push(r));
    if (this.closed) throw new DomainError(ErrorCode.Unavailable, 'bus is closed');
    const lines = messages.map((m) => encodeRecord({ topic, key: m.key, value: m.value, headers: m.headers ?? {} }));
    let segment: Segment;
    try {
      segment = await this.log!.append(lines);
    } catch (err) {
      throw new DomainError(ErrorCode.Unavailable, 'the bus log is unavailable, retry later', undefined, { cause: err });
    }
    this.handOver(topic, lines.map((line) => ({ segment, line })));
  }

  /** Queues logged records for every group of the topic; each delivery holds its segment until handled. */
  private handOver(topic: string, items: { segment: Segment; record?: LogRecord; line?: string }[]): void {
    const subs = this.subs.get(topic) ?? [];
    for (const { segment } of items) {
      // The record's own reference (taken when it was appended or read back) passes to the first group.
      if (subs.length === 0) segment.release();
      else if (subs.length > 1) segment.hold(subs.length - 1);
    }
    for (const sub of subs) {
      for (const { segment, record, line } of items) {
        this.backlog++;
        const done = () => {
          segment.release();
          if (--this.backlog < this.maxBacklog) for (const wake of this.roomWaiters.splice(0)) wake();
        };
        const message = record ? { topic, key: record.key, value: record.value, partition: null, offset: null, headers: record.headers } : null;
        sub.queue.push({ message, line, done, fail: () => undefined, logged: true });
      }
      void this.pump(sub);
    }
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
      busy: 0,
      concurrency: Math.max(1, opts.concurrency ?? 1),
      parallelBacklog: Math.max(1, opts.parallelBacklog ?? DEFAULT_PARALLEL_BACKLOG),
    });
    this.subs.set(topic, list);
    // Records read back from the log go to the first group that subscribes to their topic.
    const recovered = this.recovered.get(topic);
    if (recovered) {
      this.recovered.delete(topic);
      // A warning: records left behind mean the previous process stopped before its consumers caught up.
      this.logger.warn({ msg: 'logged messages read back, to be handled again', topic, group: opts.groupId, count: recovered.length });
      this.handOver(topic, recovered);
    }
  }

  /**
   * Hands queued messages to the handler. While one invocation is in its in-memory work, the next waits
   * (unless a large backlog builds up): publishes queue up and go over together. Once that invocation
   * is writing (BatchHooks.writing), the next starts with what has queued, so the handler's work on
   * one batch overlaps the store's write of the one before.
   */
  private async pump(sub: Subscription): Promise<void> {
    if (sub.running >= sub.concurrency) return;
    if (sub.busy > 0 && sub.queue.length < Math.min(sub.parallelBacklog, sub.maxBatchSize)) return; // the busy handler takes them next
    sub.running++;
    sub.busy++;
    let writing = false;
    const hooks = {
      writing: () => {
        if (writing) return;
        writing = true;
        sub.busy--;
        if (sub.queue.length > 0) void this.pump(sub);
      },
    };
    try {
      // Yield once so that concurrent publishers land in the same batch.
      await new Promise((r) => setImmediate(r));
      while (sub.queue.length > 0 && !writing) {
        const batch = sub.queue.splice(0, sub.maxBatchSize);
        // More is waiting: let another worker take it while this batch is handled.
        if (sub.queue.length > 0) void this.pump(sub);
        await this.deliver(sub, batch, hooks);
      }
    } finally {
      sub.running--;
      if (!writing) sub.busy--;
      // What queued while this invocation was writing (another may have been refused a slot meanwhile).
      if (sub.queue.length > 0) void this.pump(sub);
    }
  }

  private async deliver(sub: Subscription, batch: Pending[], hooks: { writing(): void }): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const messages = batch.map(messageOf);
        const result = selfTracingOn() ? await tracedConsume(sub.topic, sub.groupId, messages.map((m) => m.headers), () => sub.handler(messages, hooks)) : await sub.handler(messages, hooks);
        METRICS.kafkaConsumedMessages.inc({ topic: sub.topic, group: sub.groupId }, batch.length);
        for (const r of result?.rejected ?? []) {
          METRICS.deadLettered.inc({ topic: sub.topic, reason: 'rejected' });
          this.logger.warn({ msg: 'message dead-lettered', topic: sub.topic, dlq: deadLetterTopic(sub.topic), reason: r.reason });
          this.deadLetters.push(r.message);
          if (this.deadLetters.length > 1000) this.deadLetters.shift();
        }
        for (const p of batch) {
          p.done();
          // Handled: the entry may outlive its message in V8's eyes (see RunWriterService.retireReplaced).
          p.message = null;
        }
        return;
      } catch (err) {
        METRICS.kafkaBatchRetries.inc({ topic: sub.topic, group: sub.groupId });
        if (batch.every((p) => p.logged)) {
          // The publishers have their 2xx and the log keeps the records: try until handled (or closed,
          // and the next start hands them over again).
          if (this.closed) return;
          if (attempt === MAX_ATTEMPTS) this.logger.error({ msg: 'logged batch keeps failing; retrying', topic: sub.topic, group: sub.groupId, error: String(err) });
          await new Promise((r) => setTimeout(r, Math.min(MAX_RETRY_DELAY_MS, 50 * 2 ** attempt)));
          continue;
        }
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
    this.removeScrapeHook();
    for (const wake of this.roomWaiters.splice(0)) wake();
    for (let i = 0; i < 200; i++) {
      const busy = [...this.subs.values()].flat().some((s) => s.running > 0 || s.queue.length > 0);
      if (!busy) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await this.log?.close();
  }

  async healthy(): Promise<void> {
    if (this.closed) throw new Error('bus closed');
  }
}
