import { Inject, Injectable } from '@nestjs/common';
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { GitHostInstall, Identity } from '@th/contracts';
import { notFound, unauthorized } from '@th/platform';
import { CONTROL_PLANE_OPTIONS, type ControlPlaneOptions } from '../control-plane.options';
import { DeploymentsRepository } from '../deployments/deployments.repository';
import { RolloutWorkerHandle } from '../rollout/rollout-worker.handle';
import { SecretsCipher } from '../secrets.cipher';
import { IntegrationsRepository } from './integrations.repository';

/** The git host integration: its id goes into source_config.integration_id; pushes arrive on its webhook. */
@Injectable()
export class IntegrationsService {
  constructor(
    private readonly integrations: IntegrationsRepository,
    private readonly deployments: DeploymentsRepository,
    private readonly cipher: SecretsCipher,
    private readonly worker: RolloutWorkerHandle,
    @Inject(CONTROL_PLANE_OPTIONS) private readonly opts: ControlPlaneOptions,
  ) {}

  async install(identity: Identity, baseUrl: string): Promise<GitHostInstall> {
    const row = await this.integrations.ensure({ tenant_id: identity.tenant_id }, this.cipher.seal(randomBytes(24).toString('hex')));
    const base = (this.opts.publicUrl ?? baseUrl).replace(/\/$/, '');
    return { integration_id: row.id, webhook_url: `${base}/v1/integrations/git_host/${row.id}/webhook`, webhook_secret: this.cipher.open(row.webhook_secret) };
  }

  /**
   * A push to a repository: every build_on_push deployment of this integration on that repository and branch
   * gets a new revision at the same configuration. Verified by the HMAC signature (X-Hub-Signature-256).
   */
  async push(integrationId: string, rawBody: Buffer, signature: string | undefined, event: { ref: string; repository?: { clone_url?: string; url?: string; html_url?: string } }) {
    const integration = await this.integrations.findById(integrationId);
    if (!integration) throw notFound('Integration');
    const expected = 'sha256=' + createHmac('sha256', this.cipher.open(integration.webhook_secret)).update(rawBody).digest('hex');
    if (!signature || signature.length !== expected.length || !timingSafeEqual(Buffer.from(signature), Buffer.from(expected))) throw unauthorized('Invalid webhook signature');
    if (!event.ref.startsWith('refs/heads/')) return { revisions: [] };
    const branch = event.ref.slice('refs/heads/'.length);
    const urls = [event.repository?.clone_url, event.repository?.url, event.repository?.html_url].filter((u): u is string => !!u);
    const targets = await this.integrations.pushTargets(integrationId, urls, branch);
    const out: { deployment_id: string; revision_id: string }[] = [];
    for (const t of targets) {
      const revisionId = await this.deployments.transaction(async (tx) => {
        const d = await this.deployments.findDeploymentById(t.id, tx, true);
        if (!d || d.status === 'AWAITING_DELETE') return null;
        const now = new Date();
        const id = randomUUID();
        const message = `push to ${event.ref}`;
        await this.deployments.insertRevision(tx, {
          id,
          deployment_id: d.id,
          tenant_id: d.tenant_id,
          status: 'QUEUED',
          status_message: message,
          status_history: [{ status: 'QUEUED', at: now.toISOString(), message }],
          source_revision_config: { ...d.source_revision_config, repo_commit_sha: null },
          resource_spec: null,
          build: {
            install_command: d.source_config.install_command,
            build_command: d.source_config.build_command,
            repo_url: d.source_config.repo_url,
            listener_id: null,
            k8s_namespace: null,
            secret_references: null,
          },
          secrets: d.secrets,
          created_at: now,
          updated_at: now,
        });
        await this.deployments.updateDeployment(tx, d.id, { latest_revision_id: id });
        return id;
      });
      if (revisionId) out.push({ deployment_id: t.id, revision_id: revisionId });
    }
    this.worker.kick();
    return { revisions: out };
  }
}
