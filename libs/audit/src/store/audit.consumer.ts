import { Logger } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { z } from 'zod';
import { TOPICS, auditRecordSchema, type AuditRecord } from '@th/contracts';
import { BusConsumer, type BusMessage, type ConsumerExtras, type Rejection } from '@th/bus';
import { AuditStore } from './audit-store.service';

const eventTime = z.iso.datetime({ offset: true });

/** Consumes the audit topic: every service's tracked operations land in the store, once each. */
@BusConsumer()
export class AuditConsumer {
  private readonly logger = new Logger('audit-consumer');

  constructor(private readonly store: AuditStore) {}

  /**
   * Parsed again on receipt (a message from another service is not trusted to match the type): invalid
   * messages go to the dead-letter topic; a storage failure throws, so the batch is delivered again.
   */
  @EventPattern(TOPICS.audit, { groupId: 'audit-store', maxBatchSize: 500 } satisfies ConsumerExtras)
  async handle(@Payload() batch: BusMessage<unknown>[]): Promise<{ rejected: Rejection<unknown>[] }> {
    const rejected: Rejection<unknown>[] = [];
    const records: AuditRecord[] = [];
    const messageOf = new Map<AuditRecord, BusMessage<unknown>>();
    for (const message of batch) {
      const parsed = auditRecordSchema.safeParse(message.value);
      if (!parsed.success) {
        rejected.push({ message, reason: `invalid audit record: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` });
        continue;
      }
      if (!eventTime.safeParse(parsed.data.time).success) {
        rejected.push({ message, reason: `invalid audit record: time ${JSON.stringify(parsed.data.time)} is not an ISO 8601 date-time with a zone` });
        continue;
      }
      records.push(parsed.data);
      messageOf.set(parsed.data, message);
    }
    const result = await this.store.append(records);
    for (const c of result.conflicts) {
      const message = messageOf.get(c.record);
      if (message) rejected.push({ message, reason: c.reason });
    }
    if (result.duplicates > 0) this.logger.debug({ msg: 'audit re-deliveries ignored', count: result.duplicates });
    return { rejected };
  }
}
