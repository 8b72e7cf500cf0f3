import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import type { z } from 'zod';
import { ConfigError, loadConfig } from '@th/config';

/**
 * The production descriptions (docker-compose.yml, deploy/k8s) are never run by the tests, so nothing else
 * notices when a setting is renamed, added as required, or given a value the app refuses. These helpers read
 * the environment each description gives an app and check it against the app's config schema.
 */

/** Variables the image or the runtime reads, not the app's config: APP picks the app in the image; HOME is where git and pnpm keep their files. */
export const RUNTIME_SETTINGS: ReadonlySet<string> = new Set(['APP', 'HOME', 'NODE_OPTIONS']);

/**
 * Compose's interpolation of one value, with the shell's variables in `shell` (none set by default, so a
 * `${X:-default}` gives its default): `$$`, `${X}`, `$X`, `${X:-d}`, `${X-d}`, `${X:?err}`, `${X?err}`.
 */
export function interpolateCompose(value: string, shell: Record<string, string> = {}): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, name?: string, op?: string, arg?: string, bare?: string) => {
    if (whole === '$$') return '$';
    if (bare) return shell[bare] ?? '';
    const v = shell[name!];
    const unset = op?.startsWith(':') ? v === undefined || v === '' : v === undefined;
    if (!op || !unset) return v ?? '';
    if (op.endsWith('?')) throw new Error(`\${${name}} is required: ${arg || 'not set'}`);
    return interpolateCompose(arg ?? '', shell);
  });
}

/** The environment compose gives `service` (anchors and `<<` merges resolved, values interpolated); undefined when compose has no such service. */
export function composeEnvironment(composeText: string, service: string, shell: Record<string, string> = {}): Record<string, string> | undefined {
  const doc = parse(composeText, { merge: true }) as { services?: Record<string, { environment?: unknown }> };
  const svc = doc.services?.[service];
  if (!svc) return undefined;
  const env: Record<string, string> = {};
  const set = (k: string, v: unknown) => {
    // `KEY:` with no value passes the shell's variable through.
    const text = v === null || v === undefined ? shell[k] : interpolateCompose(String(v), shell);
    if (text !== undefined) env[k] = text;
  };
  if (Array.isArray(svc.environment)) {
    for (const item of svc.environment as string[]) {
      const i = item.indexOf('=');
      set(i < 0 ? item : item.slice(0, i), i < 0 ? null : item.slice(i + 1));
    }
  } else if (svc.environment && typeof svc.environment === 'object') {
    for (const [k, v] of Object.entries(svc.environment as Record<string, unknown>)) set(k, v);
  }
  return env;
}

interface K8sObject {
  kind?: string;
  metadata?: { name?: string };
  data?: Record<string, unknown>;
  stringData?: Record<string, unknown>;
  spec?: { template?: { spec?: { containers?: K8sContainer[] } } };
}
interface K8sKeyRef {
  name: string;
  key: string;
  optional?: boolean;
}
interface K8sProbe {
  httpGet?: { port?: number | string };
  tcpSocket?: { port?: number | string };
}
interface K8sContainer {
  name: string;
  ports?: { name?: string; containerPort: number }[];
  startupProbe?: K8sProbe;
  readinessProbe?: K8sProbe;
  livenessProbe?: K8sProbe;
  env?: { name: string; value?: unknown; valueFrom?: { configMapKeyRef?: K8sKeyRef; secretKeyRef?: K8sKeyRef } }[];
  envFrom?: { configMapRef?: { name: string; optional?: boolean }; secretRef?: { name: string; optional?: boolean } }[];
}

function k8sObjects(dir: string): { file: string; obj: K8sObject }[] {
  const out: { file: string; obj: K8sObject }[] = [];
  for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0].message}`);
      const obj = doc.toJS() as K8sObject | null;
      if (obj) out.push({ file, obj });
    }
  }
  return out;
}

function appContainer(objects: { file: string; obj: K8sObject }[], app: string): K8sContainer {
  const workloads = objects.filter(({ file, obj }) => file === `${app}.yaml` && ['Deployment', 'StatefulSet', 'DaemonSet'].includes(obj.kind ?? ''));
  const container = workloads.flatMap(({ obj }) => obj.spec?.template?.spec?.containers ?? []).find((c) => c.name === app);
  if (!container) throw new Error(`${app}.yaml has no workload with a container named ${app}`);
  return container;
}

/**
 * The environment the Kubernetes manifests in `dir` give the container `app` of a workload in `<app>.yaml`,
 * with ConfigMap and Secret references resolved against the manifests' own ConfigMaps and Secrets. A reference
 * to a map or key that is not there (and not optional) is an error. Undefined when there is no such file.
 */
export function k8sEnvironment(dir: string, app: string): Record<string, string> | undefined {
  if (!existsSync(join(dir, `${app}.yaml`))) return undefined;
  const objects = k8sObjects(dir);
  const maps = new Map<string, Record<string, string>>();
  for (const { obj } of objects) {
    if (obj.kind !== 'ConfigMap' && obj.kind !== 'Secret') continue;
    const values: Record<string, string> = {};
    for (const [k, v] of Object.entries(obj.data ?? {})) values[k] = obj.kind === 'Secret' ? Buffer.from(String(v), 'base64').toString('utf8') : String(v);
    for (const [k, v] of Object.entries(obj.stringData ?? {})) values[k] = String(v ?? '');
    maps.set(`${obj.kind}/${obj.metadata?.name}`, values);
  }
  const container = appContainer(objects, app);
  const env: Record<string, string> = {};
  const lookup = (kind: 'ConfigMap' | 'Secret', ref: { name: string; optional?: boolean }) => {
    const map = maps.get(`${kind}/${ref.name}`);
    if (!map && !ref.optional) throw new Error(`${app}.yaml refers to ${kind} ${ref.name}, which no manifest defines`);
    return map;
  };
  for (const from of container.envFrom ?? []) {
    const map = from.configMapRef ? lookup('ConfigMap', from.configMapRef) : from.secretRef ? lookup('Secret', from.secretRef) : undefined;
    Object.assign(env, map ?? {});
  }
  for (const e of container.env ?? []) {
    const ref = e.valueFrom?.configMapKeyRef ?? e.valueFrom?.secretKeyRef;
    if (!ref) {
      env[e.name] = e.value === undefined || e.value === null ? '' : String(e.value);
      continue;
    }
    const kind = e.valueFrom?.configMapKeyRef ? 'ConfigMap' : 'Secret';
    const value = lookup(kind, ref)?.[ref.key];
    if (value === undefined && !ref.optional) throw new Error(`${app}.yaml: ${e.name} refers to key ${ref.key} of ${kind} ${ref.name}, which it does not have`);
    if (value !== undefined) env[e.name] = value;
  }
  return env;
}

/** The descriptions of the repository at `root` that deploy `app`: docker-compose.yml and deploy/k8s/<app>.yaml, where they describe it. */
export function deploySources(root: string, app: string): string[] {
  const out: string[] = [];
  const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services?: Record<string, unknown> };
  if (compose.services?.[app]) out.push('docker-compose.yml');
  if (existsSync(join(root, 'deploy', 'k8s', `${app}.yaml`))) out.push(`deploy/k8s/${app}.yaml`);
  return out;
}

/** The environment `source` (one of deploySources) gives `app`. */
export function deployedEnvironment(root: string, source: string, app: string): Record<string, string> | undefined {
  return source === 'docker-compose.yml'
    ? composeEnvironment(readFileSync(join(root, source), 'utf8'), app)
    : k8sEnvironment(join(root, 'deploy', 'k8s'), app);
}

/**
 * Where `source` (one of deploySources) points at another port than `port`, the one the app listens on:
 * compose's `expose`, the container side of `ports` and the health check's URL; the manifest's
 * containerPort and its probes (by number or by the container port's name).
 */
export function portProblems(root: string, source: string, app: string, port: number): string[] {
  const problems: string[] = [];
  if (source === 'docker-compose.yml') {
    const doc = parse(readFileSync(join(root, source), 'utf8'), { merge: true }) as { services?: Record<string, ComposeService> };
    const svc = doc.services?.[app] ?? {};
    for (const e of svc.expose ?? []) if (Number(e) !== port) problems.push(`expose ${e}`);
    for (const p of svc.ports ?? []) {
      const inside = Number(interpolateCompose(String(p)).split(':').pop()!.split('/')[0]);
      if (inside !== port) problems.push(`ports ${p}`);
    }
    const check = (svc.healthcheck?.test ?? []).join(' ');
    for (const m of check.matchAll(/(?:127\.0\.0\.1|localhost):(\d+)/g)) if (Number(m[1]) !== port) problems.push(`healthcheck ${m[0]}`);
    if (!svc.expose?.length && !svc.ports?.length) problems.push('no expose or ports');
  } else {
    const container = appContainer(k8sObjects(join(root, 'deploy', 'k8s')), app);
    const named = new Map((container.ports ?? []).map((p) => [p.name, p.containerPort]));
    if (!(container.ports ?? []).some((p) => p.containerPort === port)) problems.push(`containerPort ${(container.ports ?? []).map((p) => p.containerPort).join(', ') || 'none'}`);
    for (const kind of ['startupProbe', 'readinessProbe', 'livenessProbe'] as const) {
      const probe = container[kind];
      const ref = probe?.httpGet?.port ?? probe?.tcpSocket?.port;
      if (ref === undefined) continue;
      const resolved = typeof ref === 'number' ? ref : /^\d+$/.test(ref) ? Number(ref) : named.get(ref);
      if (resolved !== port) problems.push(`${kind} port ${ref}`);
    }
  }
  return problems.map((p) => `${source}: ${p}, while ${app} listens on ${port}`);
}

interface ComposeService {
  expose?: (string | number)[];
  ports?: (string | number)[];
  healthcheck?: { test?: string[] };
}

/** Why `env` would not do for an app with this config schema: settings it does not read, and what loadConfig refuses. Empty when it would. */
export function settingsProblems(schema: z.ZodObject<z.ZodRawShape>, env: Record<string, string>): string[] {
  const known = new Set(Object.keys(schema.shape));
  const problems = Object.keys(env)
    .filter((k) => !known.has(k) && !RUNTIME_SETTINGS.has(k))
    .map((k) => `${k}: not a setting this app reads`);
  try {
    loadConfig(schema, env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  return problems;
}

/**
 * Jest cases for one app: each production description that deploys it sets only settings it reads, and
 * together with the defaults they pass its config schema. `sources` lists the descriptions expected to
 * deploy the app, so one that stops doing so fails too.
 */
export function describeDeployedSettings(root: string, app: string, schema: z.ZodObject<z.ZodRawShape>, sources: string[]): void {
  describe(`the ${app} settings in the production descriptions`, () => {
    it(`${app} is deployed by ${sources.join(' and ')}`, () => {
      expect(deploySources(root, app)).toEqual(sources);
    });
    it.each(sources)('%s: every setting is one the app reads, and they pass its schema', (source) => {
      const env = deployedEnvironment(root, source, app);
      expect(env).toBeDefined();
      expect(settingsProblems(schema, env!)).toEqual([]);
    });
    it.each(sources)('%s: the ports and health checks are the port the app listens on', (source) => {
      const { PORT } = loadConfig(schema, deployedEnvironment(root, source, app)!) as { PORT?: unknown };
      expect(typeof PORT).toBe('number');
      expect(portProblems(root, source, app, PORT as number)).toEqual([]);
    });
  });
}
