import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { TOPICS, type TopicPayload } from '@th/contracts';
import { BusConsumer, BusContext, type BusMessage, type ConsumerExtras } from '@th/bus';
import { RunWriterService } from './run-writer.service';

/** The runs topic's options known only at run time (the writer's settings, its cache reset on a rebalance). */
export const RUN_WRITER_SETTINGS = Symbol('RUN_WRITER_SETTINGS');

/** The writer role's intake: batches of the runs topic, merged and written before the bus commits them. */
@BusConsumer()
export class RunWriterConsumer {
  constructor(private readonly writer: RunWriterService) {}

  @EventPattern(TOPICS.runs, { groupId: 'ingest-writer', concurrency: 4, settings: RUN_WRITER_SETTINGS } satisfies ConsumerExtras)
  handle(@Payload() batch: BusMessage<TopicPayload<'runs'>>[], @Ctx() ctx: BusContext) {
    return this.writer.handle(batch, ctx);
  }
}
