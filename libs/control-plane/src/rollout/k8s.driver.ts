import { createHmac } from 'node:crypto';
import type { Secret } from '@th/contracts';
import type { DeploymentRow, DeploymentRuntime, RevisionRow } from '../deployments/deployments.repository';
import { resolveResourceSpec } from '../deployments/resource-spec';
import { RolloutError, type BuildResult, type DeployResult, type RolloutDriver, type SaveRuntime } from './driver';
import { k8sNames, renderK8sObjects, type K8sObject } from './k8s-render';

/** The part of @kubernetes/client-node this driver uses (loaded lazily: only k8s listeners need it). */
interface K8sClients {
  apply(obj: K8sObject): Promise<void>;
  remove(obj: Pick<K8sObject, 'apiVersion' | 'kind' | 'metadata'>): Promise<void>;
  availableReplicas(namespace: string, name: string): Promise<number>;
}

async function defaultClients(): Promise<K8sClients> {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  kc.loadFromDefault();
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  return {
    async apply(obj) {
      await objects.patch(obj, undefined, undefined, 'tracehouse-control-plane', true, k8s.PatchStrategy.ServerSideApply);
    },
    async remove(obj) {
      await objects.delete(obj).catch((err: { code?: number }) => {
        if (err.code !== 404) throw err;
      });
    },
    async availableReplicas(namespace, name) {
      const d = await apps.readNamespacedDeployment({ name, namespace });
      return d.status?.availableReplicas ?? 0;
    },
  };
}

/**
 * Rolls external_docker deployments out on a k8s listener: renders the objects from the revision's
 * resource_spec and applies them (server-side apply) into the listener's namespace.
 */
export class K8sDriver implements RolloutDriver {
  readonly name = 'k8s';
  private clients: Promise<K8sClients> | null = null;

  constructor(
    private readonly opts: { readyTimeoutMs: number; secretsKey: string },
    private readonly makeClients: () => Promise<K8sClients> = defaultClients,
  ) {}

  private k8s(): Promise<K8sClients> {
    this.clients ??= this.makeClients();
    return this.clients;
  }

  render(d: DeploymentRow, r: RevisionRow, secrets: Secret[]): K8sObject[] {
    const namespace = r.build.k8s_namespace ?? d.source_config.listener_config?.k8s_namespace;
    if (!namespace) throw new RolloutError('no k8s namespace: set source_config.listener_config.k8s_namespace');
    if (!r.source_revision_config.image_uri) throw new RolloutError('no image_uri');
    return renderK8sObjects({
      deploymentId: d.id,
      deploymentName: d.name,
      revisionId: r.id,
      namespace,
      image: r.source_revision_config.image_uri,
      spec: r.resource_spec ?? resolveResourceSpec(null),
      secrets,
      secretReferences: r.build.secret_references ?? [],
      dbPassword: createHmac('sha256', this.opts.secretsKey).update(`db:${d.id}`).digest('hex').slice(0, 32),
    });
  }

  async provision(d: DeploymentRow): Promise<DeploymentRuntime> {
    return d.runtime; // the database is one of the rendered objects, applied with the first revision
  }

  async build(): Promise<BuildResult> {
    return {}; // the image is built elsewhere
  }

  async deploy(d: DeploymentRow, r: RevisionRow, secrets: Secret[], save: SaveRuntime): Promise<DeployResult> {
    const objects = this.render(d, r, secrets);
    const k8s = await this.k8s().catch((err: Error) => {
      this.clients = null;
      throw new RolloutError(`no Kubernetes client configuration: ${err.message}`);
    });
    for (const o of objects) {
      try {
        await k8s.apply(o);
      } catch (err) {
        throw new RolloutError(`could not apply ${o.kind} ${o.metadata.namespace}/${o.metadata.name}: ${(err as Error).message}`);
      }
    }
    const ns = objects[0].metadata.namespace;
    const n = k8sNames(d.id);
    const deadline = Date.now() + this.opts.readyTimeoutMs;
    while ((await k8s.availableReplicas(ns, n.api)) < 1) {
      if (Date.now() > deadline) throw new RolloutError(`Deployment ${ns}/${n.api} had no available replica within ${this.opts.readyTimeoutMs} ms`);
      await new Promise((res) => setTimeout(res, 2000));
    }
    const url = d.source_config.custom_url ?? `http://${n.base}.${ns}.svc`;
    const runtime = { ...d.runtime, url };
    await save(runtime);
    return { url, runtime };
  }

  async retire(): Promise<void> {
    // Server-side apply of the new revision replaced the old pods; nothing else to stop.
  }

  async restore(d: DeploymentRow): Promise<DeploymentRuntime> {
    return d.runtime; // the cluster keeps running what was applied
  }

  async teardown(d: DeploymentRow): Promise<void> {
    const namespace = d.source_config.listener_config?.k8s_namespace;
    if (!namespace || !d.active_revision_id) return;
    const k8s = await this.k8s();
    const n = k8sNames(d.id);
    const refs: [string, string, string][] = [
      ['autoscaling/v2', 'HorizontalPodAutoscaler', n.api], ['autoscaling/v2', 'HorizontalPodAutoscaler', n.queue],
      ['apps/v1', 'Deployment', n.api], ['apps/v1', 'Deployment', n.queue], ['apps/v1', 'Deployment', n.cache],
      ['apps/v1', 'StatefulSet', n.db], ['v1', 'Service', n.base], ['v1', 'Service', n.cache], ['v1', 'Service', n.db],
      ['v1', 'Secret', n.env], ['v1', 'Secret', n.dbSecret],
    ];
    for (const [apiVersion, kind, name] of refs) await k8s.remove({ apiVersion, kind, metadata: { name, namespace, labels: {} } });
  }

  async close(): Promise<void> {
    // no local resources
  }
}
