import { Logger } from '@nestjs/common';
import { Kafka, logLevel, type Consumer, type Producer, type KafkaMessage, type Admin, CompressionTypes } from 'kafkajs';
import { TOPICS, topicPayloadSchemas, type TopicName, type TopicPayload } from '@th/contracts';
import { METRICS, onScrape, tracedConsume, tracedPublish } from '@th/platform';
import { BatchHandler, BusMessage, EventBus, OutgoingMessage, SubscribeOptions, deadLetterTopic } from './bus';

export interface KafkaBusOptions {
  brokers: string[];
  clientId: string;
  partitions: number;
  replicationFactor: number;
  /** Put before every topic name and consumer group id on the broker (KAFKA_PREFIX); the rest of the code uses the names of TOPICS. */
  kafkaPrefix?: string;
  /** Consumers' session timeout (KAFKA_SESSION_TIMEOUT_MS); 30 s when not given. */
  sessionTimeoutMs?: number;
}

/** Kafka options from the shared KAFKA_* settings; `service` names this client. */
export function kafkaOptionsFromConfig(
  c: { KAFKA_BROKERS: string; KAFKA_CLIENT_ID: string; KAFKA_TOPIC_PARTITIONS: number; KAFKA_REPLICATION_FACTOR: number; KAFKA_PREFIX?: string; KAFKA_SESSION_TIMEOUT_MS?: number },
  service: string,
): KafkaBusOptions {
  return {
    brokers: c.KAFKA_BROKERS.split(','),
    clientId: `${c.KAFKA_CLIENT_ID}-${service}`,
    partitions: c.KAFKA_TOPIC_PARTITIONS,
    replicationFactor: c.KAFKA_REPLICATION_FACTOR,
    kafkaPrefix: c.KAFKA_PREFIX ?? '',
    sessionTimeoutMs: c.KAFKA_SESSION_TIMEOUT_MS,
  };
}

/** A message sent to the dead-letter topic; `kind` is the metrics' bounded reason. */
interface Poison {
  raw: KafkaMessage;
  kind: 'invalid_json' | 'schema' | 'rejected';
  reason: string;
}

const MAX_PRODUCE_BYTES = 4 * 1024 * 1024;

interface QueuedSend {
  topic: string;
  /** The topic's name in TOPICS (the metrics' label: the same on every installation). */
  label: string;
  messages: { key: string; value: string; headers?: Record<string, string> }[];
  done: () => void;
  fail: (err: unknown) => void;
}

/**
 * Kafka adapter. Producer: idempotent, acks from all in-sync replicas, one request in flight, with
 * concurrent publishes coalesced into one produce request. Consumers: offsets are committed only
 * after the handler has finished the batch; poison messages go to `<topic>.dlq`.
 */
export class KafkaBus extends EventBus {
  private readonly logger = new Logger('kafka');
  private readonly kafka: Kafka;
  private readonly producer: Producer;
  private readonly admin: Admin;
  private readonly consumers: Consumer[] = [];
  private connected?: Promise<void>;
  private queue: QueuedSend[] = [];
  private sending = false;
  private closed = false;
  private readonly scrapeHooks: (() => void)[] = [];

  constructor(private readonly opts: KafkaBusOptions) {
    super();
    this.kafka = new Kafka({
      clientId: opts.clientId,
      brokers: opts.brokers,
      logLevel: logLevel.WARN,
      retry: { initialRetryTime: 200, retries: 12, maxRetryTime: 5_000 },
      logCreator: () => (entry) => {
        if (entry.level <= logLevel.WARN) this.logger.warn({ msg: entry.log.message, kafka: entry.namespace });
      },
    });
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    this.admin = this.kafka.admin();
  }

  /** A topic's or consumer group's name on the broker. */
  private onBroker(topic: string): string {
    return (this.opts.kafkaPrefix ?? '') + topic;
  }

  /** Connects the producer and creates every topic (and its dead-letter topic) if missing. */
  start(): Promise<void> {
    this.connected ??= (async () => {
      await this.admin.connect();
      const existing = new Set(await this.admin.listTopics());
      const wanted = Object.values(TOPICS).flatMap((t) => (t.endsWith('.dlq') ? [t] : [t, deadLetterTopic(t)]));
      const missing = [...new Set(wanted)].map((t) => this.onBroker(t)).filter((t) => !existing.has(t));
      if (missing.length > 0) {
        await this.admin.createTopics({
          waitForLeaders: true,
          topics: missing.map((topic) => ({
            topic,
            numPartitions: this.opts.partitions,
            replicationFactor: this.opts.replicationFactor,
            configEntries: [
              { name: 'min.insync.replicas', value: String(Math.min(2, this.opts.replicationFactor)) },
              { name: 'max.message.bytes', value: String(32 * 1024 * 1024) },
            ],
          })),
        });
      }
      await this.producer.connect();
    })();
    return this.connected;
  }

  async publish<T extends TopicName>(topic: T, messages: OutgoingMessage<TopicPayload<T>>[]): Promise<void> {
    if (messages.length === 0) return;
    await this.start();
    await tracedPublish(topic, messages.length, (trace) =>
      this.enqueue(topic, messages.map((m) => ({ key: m.key, value: JSON.stringify(m.value), headers: trace === undefined ? m.headers : { ...m.headers, ...trace } }))),
    );
  }

  private enqueue(label: string, messages: QueuedSend['messages']): Promise<void> {
    return new Promise<void>((done, fail) => {
      this.queue.push({ topic: this.onBroker(label), label, messages, done, fail });
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.sending) return;
    this.sending = true;
    try {
      while (this.queue.length > 0) {
        // Coalesce waiting publishes, but keep one produce request well under the broker's message
        // size limit: an oversized batch would be refused, and the idempotent producer retries forever.
        let take = 0;
        let bytes = 0;
        while (take < this.queue.length && (take === 0 || bytes < MAX_PRODUCE_BYTES)) {
          for (const m of this.queue[take].messages) bytes += m.value.length + m.key.length;
          take++;
        }
        const batch = this.queue.splice(0, take);
        const byTopic = new Map<string, QueuedSend['messages']>();
        for (const q of batch) {
          const list = byTopic.get(q.topic);
          if (list) for (const m of q.messages) list.push(m);
          else byTopic.set(q.topic, [...q.messages]);
        }
        const timer = METRICS.kafkaProduceDuration.startTimer({ topic: batch[0].label });
        try {
          await this.producer.sendBatch({
            acks: -1,
            timeout: 30_000,
            compression: CompressionTypes.None,
            topicMessages: [...byTopic].map(([topic, msgs]) => ({ topic, messages: msgs })),
          });
          timer();
          for (const q of batch) {
            METRICS.kafkaProducedMessages.inc({ topic: q.label }, q.messages.length);
            q.done();
          }
        } catch (err) {
          this.logger.error({ msg: 'produce failed', error: String(err) });
          for (const q of batch) {
            METRICS.kafkaProduceErrors.inc({ topic: q.label }, q.messages.length);
            q.fail(err);
          }
        }
      }
    } finally {
      this.sending = false;
    }
  }

  async subscribe<T extends TopicName>(topic: T, opts: SubscribeOptions, handler: BatchHandler<TopicPayload<T>>): Promise<void> {
    await this.start();
    const sessionTimeout = this.opts.sessionTimeoutMs ?? 30_000;
    const consumer = this.kafka.consumer({
      groupId: this.onBroker(opts.groupId),
      maxBytes: 16 * 1024 * 1024,
      maxBytesPerPartition: 8 * 1024 * 1024,
      sessionTimeout,
      // Several heartbeats per session, so one late heartbeat does not cost the consumer its partitions.
      heartbeatInterval: Math.min(3_000, Math.floor(sessionTimeout / 3)),
      maxWaitTimeInMs: 50,
    });
    this.consumers.push(consumer);
    if (opts.onAssignmentChange) {
      const notify = opts.onAssignmentChange;
      consumer.on(consumer.events.GROUP_JOIN, () => notify());
    }
    await consumer.connect();
    await consumer.subscribe({ topic: this.onBroker(topic), fromBeginning: true });
    this.scrapeHooks.push(onScrape(() => this.measureLag(topic, opts.groupId)));
    const schema = topicPayloadSchemas[topic];
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      // Partitions hold disjoint keys: the writer's batches of different partitions overlap (its merge step is serialized).
      partitionsConsumedConcurrently: Math.max(2, opts.concurrency ?? 2),
      eachBatch: async ({ batch, heartbeat, isRunning, isStale, resolveOffset }) => {
        if (batch.messages.length === 0) return;
        const parsed: BusMessage<TopicPayload<T>>[] = [];
        const poison: Poison[] = [];
        for (const raw of batch.messages) {
          const text = raw.value?.toString('utf8') ?? '';
          let value: unknown;
          try {
            value = JSON.parse(text);
          } catch (err) {
            poison.push({ raw, kind: 'invalid_json', reason: `invalid JSON: ${(err as Error).message}` });
            continue;
          }
          const result = schema.safeParse(value);
          if (!result.success) {
            poison.push({ raw, kind: 'schema', reason: `schema: ${result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` });
            continue;
          }
          parsed.push({
            topic,
            key: raw.key?.toString('utf8') ?? null,
            value: result.data as TopicPayload<T>,
            partition: batch.partition,
            offset: raw.offset,
            headers: Object.fromEntries(Object.entries(raw.headers ?? {}).map(([k, v]) => [k, String(v ?? '')])),
          });
        }
        let attempt = 0;
        for (;;) {
          if (!isRunning() || isStale()) return; // rebalanced away: the next owner re-reads from the committed offset
          try {
            const result = parsed.length > 0 ? await tracedConsume(topic, opts.groupId, parsed.map((m) => m.headers), () => handler(parsed)) : undefined;
            for (const r of result?.rejected ?? []) {
              poison.push({ raw: batch.messages.find((m) => m.offset === r.message.offset)!, kind: 'rejected', reason: r.reason });
            }
            break;
          } catch (err) {
            attempt++;
            METRICS.kafkaBatchRetries.inc({ topic, group: opts.groupId });
            this.logger.warn({ msg: 'batch handler failed, retrying', topic, partition: batch.partition, attempt, error: String(err) });
            await heartbeat().catch(() => undefined);
            await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** attempt)));
          }
        }
        if (poison.length > 0) await this.deadLetter(topic, batch.partition, poison);
        const last = batch.messages[batch.messages.length - 1].offset;
        // Resolving moves kafkajs's fetch position past the batch; committing makes it durable.
        resolveOffset(last);
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString() }]);
        METRICS.kafkaConsumedMessages.inc({ topic, group: opts.groupId }, batch.messages.length);
        await heartbeat().catch(() => undefined);
      },
    });
  }

  /**
   * The group's lag on each partition of the topic, from the broker (committed offsets against the high
   * watermarks): right also while a handler is stuck, when no batch completes to report it.
   */
  private async measureLag(topic: string, groupId: string): Promise<void> {
    const onBroker = this.onBroker(topic);
    const [ends, committed] = await Promise.all([this.admin.fetchTopicOffsets(onBroker), this.admin.fetchOffsets({ groupId: this.onBroker(groupId), topics: [onBroker] })]);
    const done = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
    for (const p of ends) {
      const at = done.get(p.partition) ?? -1n;
      const lag = BigInt(p.high) - (at < 0n ? BigInt(p.low) : at);
      METRICS.kafkaConsumerLag.set({ topic, partition: String(p.partition), group: groupId }, Number(lag < 0n ? 0n : lag));
    }
  }

  private async deadLetter(topic: string, partition: number, poison: Poison[]): Promise<void> {
    const now = new Date().toISOString();
    for (const p of poison) METRICS.deadLettered.inc({ topic, reason: p.kind });
    await this.enqueue(
      deadLetterTopic(topic),
      poison.map(({ raw, reason }) => ({
            key: raw.key?.toString('utf8') ?? '',
            value: JSON.stringify({
              topic,
              partition,
              offset: raw.offset,
              key: raw.key?.toString('utf8') ?? null,
              reason,
              value: raw.value?.toString('utf8') ?? '',
              failed_at: now,
            }),
          })),
    );
    this.logger.warn({ msg: 'messages dead-lettered', topic, count: poison.length, first_reason: poison[0].reason });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const remove of this.scrapeHooks) remove();
    await Promise.all(this.consumers.map((c) => c.disconnect().catch(() => undefined)));
    for (let i = 0; i < 200 && (this.sending || this.queue.length > 0); i++) await new Promise((r) => setTimeout(r, 25));
    await this.producer.disconnect().catch(() => undefined);
    await this.admin.disconnect().catch(() => undefined);
  }

  async healthy(): Promise<void> {
    await this.start();
    await this.admin.describeCluster();
  }
}
