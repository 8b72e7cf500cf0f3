import { resourceSpecInputSchema } from '@th/contracts';
import { resolveResourceSpec } from '../deployments/resource-spec';
import { k8sNames, renderK8sObjects, type K8sObject } from './k8s-render';

type Json = Record<string, any>;

const id = '0b5c8f52-6b1e-4d8a-9c55-0d1f2e3a4b5c';
const spec = resolveResourceSpec(
  resourceSpecInputSchema.parse({
    min_scale: 2,
    max_scale: 5,
    cpu: 1.26,
    memory_mb: 2048,
    queue_cpu: 0.5,
    cache_memory_mb: 300,
    labels: { team: 'agents' },
    annotations: { 'example.com/owner': 'ops' },
    service_account_name: 'agent-sa',
    image_pull_secrets: [{ name: 'regcred' }],
    volumes: [{ name: 'cfg', configMap: { name: 'agent-cfg' } }],
    volume_mounts: [{ name: 'cfg', mountPath: '/etc/agent' }],
    init_containers: [{ name: 'migrate', image: 'busybox', command: ['true'] }],
    sidecars: [{ name: 'proxy', image: 'envoyproxy/envoy:v1.31' }],
    db_cpu: 1,
    db_memory_mb: 1024,
    db_storage_gi: 20,
    db_max_connections: 250,
  }),
);
const objects = renderK8sObjects({
  deploymentId: id,
  deploymentName: 'my-agent',
  revisionId: 'rev-1',
  namespace: 'agents',
  image: 'registry.example.com/agent:1.2.3',
  spec,
  secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-test' }],
  secretReferences: [{ name: 'DB_PASS', secret_name: 'existing', secret_key: 'password' }],
  dbPassword: 'pw',
});
const find = (kind: string, name: string): Json => {
  const o = objects.find((x: K8sObject) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind} ${name} not rendered`);
  return o as Json;
};
const n = k8sNames(id);

describe('k8s rendering from resource_spec', () => {
  it('renders every object into the listener namespace with the extra labels and annotations', () => {
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
      [
        `Secret/${n.dbSecret}`, `Secret/${n.env}`, `StatefulSet/${n.db}`, `Service/${n.db}`, `Deployment/${n.cache}`, `Service/${n.cache}`,
        `Deployment/${n.api}`, `HorizontalPodAutoscaler/${n.api}`, `Deployment/${n.queue}`, `HorizontalPodAutoscaler/${n.queue}`, `Service/${n.base}`,
      ].sort(),
    );
    for (const o of objects) {
      expect(o.metadata.namespace).toBe('agents');
      expect(o.metadata.labels.team).toBe('agents');
      expect(o.metadata.labels['tracehouse.dev/deployment-id']).toBe(id);
      expect(o.metadata.annotations?.['example.com/owner']).toBe('ops');
    }
  });

  it('api Deployment: replicas, CPU rounded to one decimal, limits twice the request, pod settings', () => {
    const d = find('Deployment', n.api);
    expect(d.spec.replicas).toBe(2);
    const pod = d.spec.template.spec;
    expect(pod.serviceAccountName).toBe('agent-sa');
    expect(pod.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    expect(pod.volumes).toEqual([{ name: 'cfg', configMap: { name: 'agent-cfg' } }]);
    expect(pod.initContainers).toEqual([{ name: 'migrate', image: 'busybox', command: ['true'] }]);
    expect(pod.containers.map((c: Json) => c.name)).toEqual(['api', 'proxy']);
    const main = pod.containers[0];
    expect(main.image).toBe('registry.example.com/agent:1.2.3');
    expect(main.resources).toEqual({ requests: { cpu: '1300m', memory: '2048Mi' }, limits: { cpu: '2600m', memory: '4096Mi' } });
    expect(main.volumeMounts).toEqual([{ name: 'cfg', mountPath: '/etc/agent' }]);
    expect(main.envFrom).toEqual([{ secretRef: { name: n.env } }]);
    expect(main.env).toContainEqual({ name: 'DB_PASS', valueFrom: { secretKeyRef: { name: 'existing', key: 'password' } } });
    expect(main.readinessProbe.httpGet.path).toBe('/ok');
    expect(d.spec.template.metadata.labels.team).toBe('agents');
    expect(d.spec.template.metadata.annotations['tracehouse.dev/revision-id']).toBe('rev-1');
    expect(d.spec.selector.matchLabels).not.toHaveProperty('team');
  });

  it('autoscalers follow min_scale/max_scale and the queue_* values (which default to the main ones)', () => {
    expect(find('HorizontalPodAutoscaler', n.api).spec).toMatchObject({ minReplicas: 2, maxReplicas: 5, scaleTargetRef: { kind: 'Deployment', name: n.api } });
    expect(find('HorizontalPodAutoscaler', n.queue).spec).toMatchObject({ minReplicas: 2, maxReplicas: 5 });
    const q = find('Deployment', n.queue);
    expect(q.spec.replicas).toBe(2);
    expect(q.spec.template.spec.containers[0].resources).toEqual({ requests: { cpu: '500m', memory: '2048Mi' }, limits: { cpu: '1000m', memory: '4096Mi' } });
  });

  it('cache: memory limit equals the request; CPU limit twice', () => {
    const c = find('Deployment', n.cache).spec.template.spec.containers[0];
    expect(c.resources).toEqual({ requests: { cpu: '500m', memory: '300Mi' }, limits: { cpu: '1000m', memory: '300Mi' } });
  });

  it('database: StatefulSet with db_* resources, storage and max_connections', () => {
    const s = find('StatefulSet', n.db);
    const c = s.spec.template.spec.containers[0];
    expect(c.resources).toEqual({ requests: { cpu: '1000m', memory: '1024Mi' }, limits: { cpu: '2000m', memory: '2048Mi' } });
    expect(c.args).toEqual(['-c', 'max_connections=250']);
    expect(s.spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('20Gi');
  });

  it('secrets reach the containers as environment variables through a Secret', () => {
    const env = find('Secret', n.env);
    expect(env.stringData.OPENAI_API_KEY).toBe('sk-test');
    expect(env.stringData.DATABASE_URI).toContain(`${n.db}.agents.svc`);
    expect(find('Service', n.base).spec.ports[0]).toMatchObject({ port: 80, targetPort: 8000 });
  });
});
