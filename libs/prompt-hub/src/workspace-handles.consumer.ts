import { EventPattern, Payload } from '@nestjs/microservices';
import { TOPICS, workspaceChangedEventSchema } from '@th/contracts';
import { BusConsumer, type BusMessage, type ConsumerExtras, type Rejection } from '@th/bus';
import { PromptHubService } from './prompt-hub.service';

/** Keeps the hub's copy of the workspaces' tenant handles (owner names in paths and listings) from the gateway's events. */
@BusConsumer()
export class WorkspaceHandlesConsumer {
  constructor(private readonly hub: PromptHubService) {}

  /** In order per workspace (keyed by its id); an invalid message is dead-lettered, a storage failure retries the batch. */
  @EventPattern(TOPICS.workspaces, { groupId: 'prompt-hub-handles', maxBatchSize: 500 } satisfies ConsumerExtras)
  async handle(@Payload() batch: BusMessage<unknown>[]): Promise<{ rejected: Rejection<unknown>[] }> {
    const rejected: Rejection<unknown>[] = [];
    for (const message of batch) {
      const parsed = workspaceChangedEventSchema.safeParse(message.value);
      if (!parsed.success) {
        rejected.push({ message, reason: `invalid workspace event: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` });
        continue;
      }
      await this.hub.workspaceChanged(parsed.data);
    }
    return { rejected };
  }
}
