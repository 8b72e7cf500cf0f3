import { EventPattern, Payload } from '@nestjs/microservices';
import { TOPICS, deploymentCreatedEventSchema, type TopicPayload } from '@th/contracts';
import { BusConsumer, type BusMessage, type ConsumerExtras, type Rejection } from '@th/bus';
import { ProjectsRepository } from './projects.repository';

type DeploymentMessage = BusMessage<TopicPayload<'deployments'>>;

/**
 * Creating a deployment creates the tracing project of the same name (the spec's control-plane rule):
 * the control plane publishes `deployment_created`, and this consumer makes sure the project exists.
 * Idempotent: a re-delivered event finds the project already there.
 */
@BusConsumer()
export class DeploymentProjectsConsumer {
  constructor(private readonly projects: ProjectsRepository) {}

  @EventPattern(TOPICS.deployments, { groupId: 'query-deployment-projects', maxBatchSize: 500 } satisfies ConsumerExtras)
  async handle(@Payload() batch: DeploymentMessage[]): Promise<{ rejected: Rejection<TopicPayload<'deployments'>>[] }> {
    const rejected: Rejection<TopicPayload<'deployments'>>[] = [];
    const byTenant = new Map<string, Set<string>>();
    for (const message of batch) {
      const parsed = deploymentCreatedEventSchema.safeParse(message.value);
      if (!parsed.success) {
        rejected.push({ message, reason: `invalid deployment event: ${parsed.error.message}` });
        continue;
      }
      const names = byTenant.get(parsed.data.tenant_id) ?? new Set<string>();
      names.add(parsed.data.name);
      byTenant.set(parsed.data.tenant_id, names);
    }
    for (const [tenant_id, names] of byTenant) await this.projects.ensureNames({ tenant_id }, [...names]);
    return { rejected };
  }
}
