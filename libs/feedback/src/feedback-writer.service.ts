import { Injectable } from '@nestjs/common';
import { feedbackEventSchema, type FeedbackEvent, type TopicPayload } from '@th/contracts';
import type { BusMessage, Rejection } from '@th/bus';
import { FeedbackRepository } from './feedback.repository';

type FeedbackMessage = BusMessage<TopicPayload<'feedback'>>;

/**
 * The writer role for feedback: inserts every version of a batch of the `feedback` topic as it came
 * (see FeedbackWriterConsumer); the store keeps the newest per id, so replays and duplicates change nothing.
 */
@Injectable()
export class FeedbackWriterService {
  constructor(private readonly repo: FeedbackRepository) {}

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
