import { EventPattern, Payload } from '@nestjs/microservices';
import { TOPICS, type TopicPayload } from '@th/contracts';
import { BusConsumer, type BusMessage, type ConsumerExtras } from '@th/bus';
import { ExportWorkerService } from './export-worker.service';

/**
 * Exports announced on the `exports` topic, taken at once. The topic only wakes the worker early: the job
 * itself is durable in PostgreSQL and taken under a lease, and the worker's poll finds it anyway. So it joins
 * in the background: joining the group can take up to Kafka's session timeout when a worker just died (its
 * member is still in the group), and a replacement must not wait for that.
 */
@BusConsumer()
export class ExportWakeupConsumer {
  constructor(private readonly worker: ExportWorkerService) {}

  @EventPattern(TOPICS.exports, { groupId: 'export-worker', maxBatchSize: 100, background: true } satisfies ConsumerExtras)
  wake(@Payload() batch: BusMessage<TopicPayload<'exports'>>[]): void {
    for (const m of batch) this.worker.take(m.value.export_id);
  }
}
