import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { TOPICS, feedbackEventSchema, type FeedbackEvent, type TopicPayload } from '@th/contracts';
import { EventBus, type BusMessage, type Rejection } from '@th/bus';
import { FeedbackRepository } from './feedback.repository';
import { FEEDBACK_OPTIONS, type FeedbackOptions } from './feedback.options';

type FeedbackMessage = BusMessage<TopicPayload<'feedback'>>;

/**
 * The writer role for feedback: consumes the `feedback` topic in batches and inserts every version
 * as it came; the store keeps the newest per id, so replays and duplicates change nothing.
 */
@Injectable()
export class FeedbackWriterService implements OnApplicationBootstrap {
  constructor(
    private readonly bus: EventBus,
    private readonly repo: FeedbackRepository,
    @Inject(FEEDBACK_OPTIONS) private readonly options: FeedbackOptions,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.options.writer) return;
    await this.bus.subscribe(TOPICS.feedback, { groupId: 'feedback-writer', maxBatchSize: 10_000 }, (batch) => this.handle(batch));
  }

  async handle(batch: FeedbackMessage[]): Promise<{ rejected: Rejection<TopicPayload<'feedback'>>[] }> {
    const rejected: Rejection<TopicPayload<'feedback'>>[] = [];
    const events: FeedbackEvent[] = [];
    for (const message of batch) {
      // The in-process bus hands over the published object unparsed: check it here like Kafka does.
      const parsed = feedbackEventSchema.safeParse(message.value);
      if (parsed.success) events.push(parsed.data);
      else rejected.push({ message, reason: `invalid feedback event: ${parsed.error.message}` });
    }
    await this.repo.insert(events);
    return { rejected };
  }
}
