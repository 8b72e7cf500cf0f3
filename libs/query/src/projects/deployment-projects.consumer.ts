import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { TOPICS, deploymentCreatedEventSchema, type TopicPayload } from '@th/contracts';
import { EventBus, type BusMessage, type Rejection } from '@th/bus';
import { ProjectsRepository } from './projects.repository';

type DeploymentMessage = BusMessage<TopicPayload<'deployments'>>;

/**
 * Creating a deployment creates the tracing project of the same name (the spec's control-plane rule):
 * the control plane publishes `deployment_created`, and this consumer makes sure the project exists.
 * Idempotent: a re-delivered event finds the project already there.
 */
@Injectable()
export class DeploymentProjectsConsumer implements OnApplicationBootstrap {
  constructor(
    private readonly bus: EventBus,
    private readonly projects: ProjectsRepository,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.bus.subscribe(TOPICS.deployments, { groupId: 'query-deployment-projects', maxBatchSize: 500 }, (batch) => this.handle(batch));
  }

  async handle(batch: DeploymentMessage[]): Promise<{ rejected: Rejection<TopicPayload<'deployments'>>[] }> {
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
