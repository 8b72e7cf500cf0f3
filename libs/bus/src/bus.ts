import type { TopicName, TopicPayload } from '@th/contracts';

export interface OutgoingMessage<T> {
  /** Partitioning key: messages with one key stay in order on one partition. */
  key: string;
  value: T;
  headers?: Record<string, string>;
}

export interface BusMessage<T> {
  topic: string;
  key: string | null;
  value: T;
  partition: number | null;
  offset: string | null;
  headers: Record<string, string>;
}

export interface Rejection<T> {
  message: BusMessage<T>;
  reason: string;
}

/**
 * Handles one batch. Throwing means "try the whole batch again later" (a transient failure);
 * returning rejections sends those messages to the dead-letter topic and moves on.
 */
export type BatchHandler<T> = (batch: BusMessage<T>[], hooks?: BatchHooks) => Promise<{ rejected?: Rejection<T>[] } | void>;

/** What a handler may tell the bus while it works on a batch (the Kafka bus passes none). */
export interface BatchHooks {
  /**
   * The handler's in-memory work is done and it is waiting on storage: the bus may start the next
   * batch now (in process), so that batch's work overlaps this one's write. Idempotent.
   */
  writing(): void;
}

export interface SubscribeOptions {
  groupId: string;
  maxBatchSize?: number;
  /** Batches handed to the handler at once (in process; with Kafka, partitions consumed at once, at least 2). */
  concurrency?: number;
  /** In process: while a batch is being handled, another starts only once this many messages wait. */
  parallelBacklog?: number;
  /** Called when this consumer's partitions change (state cached per partition becomes stale). */
  onAssignmentChange?: () => void;
}

/** The event bus; Kafka in the cluster form, in process in standalone. Publishing is typed by topic. */
export abstract class EventBus {
  /** Resolves once the messages are durable (Kafka: acknowledged by all in-sync replicas; in process: handled). */
  abstract publish<T extends TopicName>(topic: T, messages: OutgoingMessage<TopicPayload<T>>[]): Promise<void>;
  abstract subscribe<T extends TopicName>(topic: T, opts: SubscribeOptions, handler: BatchHandler<TopicPayload<T>>): Promise<void>;
  /** Stops consumers (after their in-flight batch is committed), then producers. */
  abstract close(): Promise<void>;
  abstract healthy(): Promise<void>;
}

export const deadLetterTopic = (topic: string) => `${topic}.dlq`;
