import { EventPattern, Payload } from '@nestjs/microservices';
import { TOPICS, type TopicPayload } from '@th/contracts';
import { BusConsumer, type BusMessage, type ConsumerExtras } from '@th/bus';
import { FeedbackWriterService } from './feedback-writer.service';

/** The feedback writer's intake: batches of the feedback topic. */
@BusConsumer()
export class FeedbackWriterConsumer {
  constructor(private readonly writer: FeedbackWriterService) {}

  @EventPattern(TOPICS.feedback, { groupId: 'feedback-writer', maxBatchSize: 10_000 } satisfies ConsumerExtras)
  handle(@Payload() batch: BusMessage<TopicPayload<'feedback'>>[]) {
    return this.writer.handle(batch);
  }
}
