import type { ResourceSpec, Secret, SecretReference } from '@th/contracts';

/** A Kubernetes object as applied (server-side apply takes whole objects). */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export interface K8sRenderInput {
  deploymentId: string;
  deploymentName: string;
  revisionId: string;
  namespace: string;
  image: string;
  spec: ResourceSpec;
  secrets: Secret[];
  secretReferences: SecretReference[];
  /** The deployment database's password (stable for the deployment's lifetime). */
  dbPassword: string;
  /** Images of the parts this installation supplies. */
  images?: { postgres?: string; redis?: string };
}

export const API_PORT = 8000;
const cpuQ = (cores: number) => `${Math.round(cores * 1000)}m`;
const memQ = (mb: number) => `${mb}Mi`;

/** Object names for one deployment (the id keeps them unique and within 63 characters). */
export function k8sNames(deploymentId: string) {
  const base = `th-${deploymentId}`;
  return { base, api: `${base}-api`, queue: `${base}-queue`, env: `${base}-env`, cache: `${base}-cache`, db: `${base}-db`, dbSecret: `${base}-db-auth` };
}

/**
 * Renders what a deployment runs on a k8s listener from its revision's resource_spec: the API server and
 * queue workers (Deployments with autoscalers), their Service, the cache and the database (a StatefulSet with
 * its volume claim), and the Secret that carries the deployment's secrets as environment variables.
 */
export function renderK8sObjects(input: K8sRenderInput): K8sObject[] {
  const { spec, namespace } = input;
  const n = k8sNames(input.deploymentId);
  const own = { 'app.kubernetes.io/managed-by': 'tracehouse', 'tracehouse.dev/deployment-id': input.deploymentId };
  const labels = (component: string) => ({ ...spec.labels, ...own, 'app.kubernetes.io/component': component });
  const meta = (name: string, component: string) => ({ name, namespace, labels: labels(component), annotations: { ...spec.annotations } });
  const selector = (component: string) => ({ ...own, 'app.kubernetes.io/component': component });
  const dbUri = `postgres://postgres:${encodeURIComponent(input.dbPassword)}@${n.db}.${namespace}.svc:5432/postgres`;
  const env = [
    ...input.secretReferences.map((r) => ({ name: r.name, valueFrom: { secretKeyRef: { name: r.secret_name, key: r.secret_key } } })),
  ];
  const podSpec = (component: string, resources: { cpu: number; cpuLimit: number; mem: number; memLimit: number }, role: string) => ({
    ...(spec.service_account_name ? { serviceAccountName: spec.service_account_name } : {}),
    imagePullSecrets: spec.image_pull_secrets.map((s) => ({ name: s.name })),
    volumes: spec.volumes,
    initContainers: spec.init_containers,
    containers: [
      {
        name: component,
        image: input.image,
        ports: [{ name: 'http', containerPort: API_PORT }],
        envFrom: [{ secretRef: { name: n.env } }],
        env: [...env, { name: 'PORT', value: String(API_PORT) }, { name: 'TH_AGENT_ROLE', value: role }],
        resources: {
          requests: { cpu: cpuQ(resources.cpu), memory: memQ(resources.mem) },
          limits: { cpu: cpuQ(resources.cpuLimit), memory: memQ(resources.memLimit) },
        },
        volumeMounts: spec.volume_mounts,
        ...(role === 'api' ? { readinessProbe: { httpGet: { path: '/ok', port: API_PORT }, periodSeconds: 5 } } : {}),
      },
      ...spec.sidecars,
    ],
  });
  const workload = (name: string, component: string, replicas: number, resources: Parameters<typeof podSpec>[1], role: string): K8sObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(name, component),
    spec: {
      replicas,
      selector: { matchLabels: selector(component) },
      template: {
        metadata: { labels: labels(component), annotations: { ...spec.annotations, 'tracehouse.dev/revision-id': input.revisionId } },
        spec: podSpec(component, resources, role),
      },
    },
  });
  const hpa = (name: string, component: string, min: number, max: number): K8sObject => ({
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: meta(name, component),
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name },
      minReplicas: Math.max(1, min),
      maxReplicas: Math.max(1, min, max),
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 75 } } }],
    },
  });
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: meta(n.dbSecret, 'database'),
      type: 'Opaque',
      stringData: { POSTGRES_PASSWORD: input.dbPassword },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: meta(n.env, 'api'),
      type: 'Opaque',
      stringData: {
        ...Object.fromEntries(input.secrets.map((s) => [s.name, s.value])),
        DATABASE_URI: dbUri,
        DATABASE_URL: dbUri,
        REDIS_URI: `redis://${n.cache}.${namespace}.svc:6379`,
        LANGSMITH_PROJECT: input.deploymentName,
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: meta(n.db, 'database'),
      spec: {
        serviceName: n.db,
        replicas: 1,
        selector: { matchLabels: selector('database') },
        template: {
          metadata: { labels: labels('database'), annotations: { ...spec.annotations } },
          spec: {
            containers: [
              {
                name: 'postgres',
                image: input.images?.postgres ?? 'postgres:16',
                args: ['-c', `max_connections=${spec.db_max_connections}`],
                ports: [{ name: 'postgres', containerPort: 5432 }],
                env: [
                  { name: 'POSTGRES_PASSWORD', valueFrom: { secretKeyRef: { name: n.dbSecret, key: 'POSTGRES_PASSWORD' } } },
                  { name: 'PGDATA', value: '/var/lib/postgresql/data/pgdata' },
                ],
                resources: {
                  requests: { cpu: cpuQ(spec.db_cpu), memory: memQ(spec.db_memory_mb) },
                  limits: { cpu: cpuQ(spec.db_cpu_limit), memory: memQ(spec.db_memory_limit_mb) },
                },
                volumeMounts: [{ name: 'data', mountPath: '/var/lib/postgresql/data' }],
              },
            ],
          },
        },
        volumeClaimTemplates: [
          {
            metadata: { name: 'data', labels: labels('database') },
            spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: `${spec.db_storage_gi}Gi` } } },
          },
        ],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(n.db, 'database'),
      spec: { clusterIP: 'None', selector: selector('database'), ports: [{ name: 'postgres', port: 5432, targetPort: 5432 }] },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(n.cache, 'cache'),
      spec: {
        replicas: 1,
        selector: { matchLabels: selector('cache') },
        template: {
          metadata: { labels: labels('cache'), annotations: { ...spec.annotations } },
          spec: {
            containers: [
              {
                name: 'redis',
                image: input.images?.redis ?? 'redis:7',
                ports: [{ name: 'redis', containerPort: 6379 }],
                resources: {
                  requests: { cpu: cpuQ(spec.cache_cpu), memory: memQ(spec.cache_memory_mb) },
                  limits: { cpu: cpuQ(spec.cache_cpu_limit), memory: memQ(spec.cache_memory_limit_mb) },
                },
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(n.cache, 'cache'),
      spec: { selector: selector('cache'), ports: [{ name: 'redis', port: 6379, targetPort: 6379 }] },
    },
    workload(n.api, 'api', spec.min_scale, { cpu: spec.cpu, cpuLimit: spec.cpu_limit, mem: spec.memory_mb, memLimit: spec.memory_limit_mb }, 'api'),
    hpa(n.api, 'api', spec.min_scale, spec.max_scale),
    workload(n.queue, 'queue', spec.queue_min_scale, { cpu: spec.queue_cpu, cpuLimit: spec.queue_cpu_limit, mem: spec.queue_memory_mb, memLimit: spec.queue_memory_limit_mb }, 'queue'),
    hpa(n.queue, 'queue', spec.queue_min_scale, spec.queue_max_scale),
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(n.base, 'api'),
      spec: { selector: selector('api'), ports: [{ name: 'http', port: 80, targetPort: API_PORT }] },
    },
  ];
}
