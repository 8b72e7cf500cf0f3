import 'reflect-metadata';
import type { DynamicModule, Type } from '@nestjs/common';
import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, MODULE_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import type { DataSource } from 'typeorm';
import { AGENT_SERVER_ROUTES, API_ROUTES, CONTROL_PLANE_ROUTES, INTERNAL_ROUTES, ROUTE_TABLE, documentedSummary, openApiPath, servicePath, type RouteSpec, type ServiceName } from '@th/contracts';
import { AgentServerModule, type AgentServerConfig } from '@th/agent-server';
import { AuditModule, type AuditOptions } from '@th/audit';
import { ControlPlaneModule, buildControlPlaneOpenApi, type ControlPlaneOptions } from '@th/control-plane';
import { DatasetsModule, ExperimentsModule } from '@th/datasets';
import { ExportWorkerModule, type ExportWorkerModuleOptions } from '@th/export-worker';
import { FeedbackModule } from '@th/feedback';
import { GatewayModule, buildOpenApiDocument, routeFor, type GatewayInfoOptions, type GatewayModuleOptions } from '@th/gateway';
import { IngestModule, type IngestOptions } from '@th/ingest';
import { HealthModule } from '@th/platform';
import { TRACKED_OPERATION } from '@th/audit-client';
import { PromptHubModule, type PromptHubOptions } from '@th/prompt-hub';
import { QueryModule } from '@th/query';

// Only the modules' controller lists are read: nothing is instantiated, so no argument is used.
const none = {} as never;
const db = none as DataSource;

/** The controllers each app mounts, as its apps/<app>/src/main.ts composes them. */
const APPS: Record<ServiceName, (Type<unknown> | DynamicModule)[]> = {
  gateway: [HealthModule, GatewayModule.forRoot(db, none as GatewayInfoOptions, none as GatewayModuleOptions)],
  ingest: [HealthModule, IngestModule.forRoot(none as IngestOptions), FeedbackModule.forRoot({ writes: true, reads: false, writer: false })],
  query: [
    HealthModule,
    QueryModule.forRoot(db),
    DatasetsModule.forRoot(db),
    FeedbackModule.forRoot({ writes: false, reads: true, writer: false }),
    PromptHubModule.forRoot(db, { secretsKey: 'x'.repeat(44), outboundAllowedHosts: '' } as unknown as PromptHubOptions),
    ExperimentsModule.forRoot({ imports: [], projects: none, runs: none, feedback: none }),
  ],
  'export-worker': [HealthModule, ExportWorkerModule.forRoot({ dataSource: db, encryptionKey: 'x'.repeat(44), outboundAllowedHosts: '' } as unknown as ExportWorkerModuleOptions)],
  audit: [HealthModule, AuditModule.forRoot(db, { chainKey: 'x'.repeat(32) } as unknown as AuditOptions)],
  'control-plane': [HealthModule, ControlPlaneModule.forRoot(db, { secretsKey: 'x'.repeat(44), outbound: { allowedHosts: '', allowLocalRepos: false } } as unknown as ControlPlaneOptions)],
  'agent-server': [HealthModule, AgentServerModule.forRoot(none as AgentServerConfig)],
};

const METHODS: Partial<Record<RequestMethod, RouteSpec['method']>> = {
  [RequestMethod.GET]: 'get',
  [RequestMethod.POST]: 'post',
  [RequestMethod.PUT]: 'put',
  [RequestMethod.PATCH]: 'patch',
  [RequestMethod.DELETE]: 'delete',
};

interface ControllerRoute {
  app: ServiceName;
  method: RouteSpec['method'];
  /** As the table writes it: `{param}`, `{param*}` for a wildcard. */
  path: string;
  handler: string;
  /** Marked @TrackedOperation(). */
  tracked: boolean;
}

function controllersOf(mods: (Type<unknown> | DynamicModule)[]): Type<unknown>[] {
  return mods.flatMap((m) => ('module' in m ? (m.controllers ?? []) : ((Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, m) as Type<unknown>[] | undefined) ?? [])));
}

const toTemplate = (nestPath: string) => nestPath.replace(/:(\w+)/g, '{$1}').replace(/\*(\w+)/g, '{$1*}');
const asList = (p: string | string[] | undefined) => (Array.isArray(p) ? p : [p ?? '']);
const join = (...parts: string[]) => '/' + parts.map((p) => p.replace(/^\/+|\/+$/g, '')).filter((p) => p !== '').join('/');

/** Every (method, path) the app's controllers map, from Nest's PATH_METADATA and METHOD_METADATA. */
function routesOf(app: ServiceName): ControllerRoute[] {
  const out: ControllerRoute[] = [];
  for (const controller of controllersOf(APPS[app])) {
    const prefixes = asList(Reflect.getMetadata(PATH_METADATA, controller) as string | string[] | undefined);
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const fn = (controller.prototype as Record<string, unknown>)[name];
      if (name === 'constructor' || typeof fn !== 'function') continue;
      const requestMethod = Reflect.getMetadata(METHOD_METADATA, fn) as RequestMethod | undefined;
      if (requestMethod === undefined) continue;
      const method = METHODS[requestMethod];
      if (method === undefined) throw new Error(`${controller.name}.${name}: route method ${RequestMethod[requestMethod]} is not one the route table describes`);
      for (const prefix of prefixes)
        for (const sub of asList(Reflect.getMetadata(PATH_METADATA, fn) as string | string[] | undefined))
          out.push({ app, method, path: toTemplate(join(prefix, sub)), handler: `${controller.name}.${name}`, tracked: Reflect.getMetadata(TRACKED_OPERATION, fn) === true });
    }
  }
  return out;
}

const ALL = (Object.keys(APPS) as ServiceName[]).flatMap(routesOf);
const key = (method: string, path: string) => `${method.toUpperCase()} ${servicePath(path)}`;
const indexed = (routes: readonly RouteSpec[]) => {
  const m = new Map<string, RouteSpec[]>();
  for (const r of routes) m.set(key(r.method, r.path), [...(m.get(key(r.method, r.path)) ?? []), r]);
  return m;
};
/** The agent server's API is its own (served by each deployment); every other app's routes are the gateway's API. */
const TABLES = { api: indexed(ROUTE_TABLE), agent: indexed(AGENT_SERVER_ROUTES) };
const tableOf = (app: ServiceName) => (app === 'agent-server' ? TABLES.agent : TABLES.api);
const listOf = (r: RouteSpec) =>
  API_ROUTES.includes(r) ? 'API_ROUTES' : CONTROL_PLANE_ROUTES.includes(r) ? 'CONTROL_PLANE_ROUTES' : AGENT_SERVER_ROUTES.includes(r) ? 'AGENT_SERVER_ROUTES' : 'INTERNAL_ROUTES';

const UPSTREAMS = {
  ingest: 'http://ingest',
  query: 'http://query',
  exportWorker: 'http://export-worker',
  audit: 'http://audit',
  controlPlane: 'http://control-plane',
  agentServer: 'http://agent-server',
};
const UPSTREAM_URL: Record<ServiceName, string | null> = {
  gateway: null,
  ingest: UPSTREAMS.ingest,
  query: UPSTREAMS.query,
  'export-worker': UPSTREAMS.exportWorker,
  audit: UPSTREAMS.audit,
  'control-plane': UPSTREAMS.controlPlane,
  'agent-server': UPSTREAMS.agentServer,
};
/** A request path for a table path: each parameter a UUID, a wildcard two segments. */
const sample = (path: string) => path.replace(/\{\w+\*\}/g, 'deployments/3f1c0a52-8a3e-4d57-9a34-1e0c6f1d2b7a.tar.gz').replace(/\{\w+\}/g, '3f1c0a52-8a3e-4d57-9a34-1e0c6f1d2b7a');

describe('the route table (libs/contracts/src/routes) against every controller route of every app', () => {
  it('finds the controllers', () => {
    for (const app of Object.keys(APPS) as ServiceName[]) expect({ app, routes: routesOf(app).length > 0 }).toEqual({ app, routes: true });
    expect(ALL.length).toBeGreaterThan(150);
  });

  it('every controller route has exactly one entry, owned by the app that serves it', () => {
    const problems: string[] = [];
    for (const r of ALL) {
      if (r.path.startsWith('/health')) continue; // checked below: every app serves its own probes
      const entries = tableOf(r.app).get(key(r.method, r.path)) ?? [];
      if (entries.length === 0)
        problems.push(
          `${r.method.toUpperCase()} ${r.path} (${r.handler}, app ${r.app}) is in no route table entry: add { method: '${r.method}', path: '${r.app === 'agent-server' ? '' : '/api/v1'}${r.path}' (or the path clients use), summary, tag, body/query, responses } ` +
            (r.app === 'agent-server'
              ? 'to AGENT_SERVER_ROUTES in libs/contracts/src/routes/agent-server.routes.ts'
              : `with service: '${r.app}' to libs/contracts/src/routes: API_ROUTES (api.routes.ts or the file of its area) to publish it in /openapi.json, CONTROL_PLANE_ROUTES for /v2/openapi.json, INTERNAL_ROUTES (with why) otherwise`),
        );
      else if (entries.length > 1) problems.push(`${r.method.toUpperCase()} ${r.path} (${r.handler}) has ${entries.length} entries in the route table: keep one`);
      else if (entries[0].service !== r.app && !(entries[0].service === 'gateway' && r.app === 'gateway'))
        problems.push(`${r.method.toUpperCase()} ${r.path} (${r.handler}) is served by app '${r.app}' but its entry in ${listOf(entries[0])} says service: '${entries[0].service}'`);
    }
    expect(problems).toEqual([]);
  });

  it('a route is marked @TrackedOperation() exactly when its entry names a tracked operation', () => {
    const wrong: string[] = [];
    for (const r of ALL) {
      const entry = tableOf(r.app).get(key(r.method, r.path))?.[0];
      if (entry === undefined || r.tracked === (entry.audit !== undefined)) continue;
      wrong.push(
        r.tracked
          ? `${r.handler} (${r.method.toUpperCase()} ${r.path}) is marked @TrackedOperation(): give its entry in ${listOf(entry)} audit: { operation, resourceType?, resourceParam? }`
          : `${r.handler} (${r.method.toUpperCase()} ${r.path}): its entry in ${listOf(entry)} names audit operation '${entry.audit?.operation}': mark the method @TrackedOperation()`,
      );
    }
    expect(wrong).toEqual([]);
  });

  it('every app serves its health probes itself (not in the table, never proxied)', () => {
    for (const app of Object.keys(APPS) as ServiceName[]) {
      const health = routesOf(app).filter((r) => r.path.startsWith('/health'));
      expect({ app, health: health.length > 0 }).toEqual({ app, health: true });
      for (const r of health) expect({ path: r.path, routed: routeFor(r.method.toUpperCase(), r.path, UPSTREAMS) }).toEqual({ path: r.path, routed: null });
    }
  });

  it('every table entry is served by a controller of its service (no stale entries)', () => {
    const served = new Set(ALL.map((r) => `${r.app} ${key(r.method, r.path)}`));
    const stale = [...ROUTE_TABLE, ...AGENT_SERVER_ROUTES].filter((r) => !served.has(`${r.service} ${key(r.method, r.path)}`)).map(
      (r) => `${r.method.toUpperCase()} ${r.path} (${listOf(r)}, service '${r.service}'): no controller of that service maps it`,
    );
    expect(stale).toEqual([]);
  });

  it("the gateway routes every entry to its owner's upstream (its own and the internal ones to none)", () => {
    const wrong: string[] = [];
    for (const r of ROUTE_TABLE) {
      const expected = r.internal ? null : UPSTREAM_URL[r.service];
      const got = routeFor(r.method.toUpperCase(), sample(r.path), UPSTREAMS);
      if (got !== expected) wrong.push(`${r.method.toUpperCase()} ${sample(r.path)}: routed to ${got}, owner ${r.service} (${expected})`);
    }
    expect(wrong).toEqual([]);
  });

  it('every published entry is in its OpenAPI document with its summary', () => {
    const docs: [RouteSpec[], Record<string, unknown>][] = [
      [API_ROUTES, buildOpenApiDocument('test')],
      [CONTROL_PLANE_ROUTES, buildControlPlaneOpenApi()],
    ];
    const missing: string[] = [];
    for (const [routes, doc] of docs) {
      const paths = doc.paths as Record<string, Record<string, { summary?: string }>>;
      for (const r of routes) if (paths[openApiPath(r.path)]?.[r.method]?.summary !== documentedSummary(r)) missing.push(`${r.method.toUpperCase()} ${r.path}`);
    }
    expect(missing).toEqual([]);
    expect(INTERNAL_ROUTES.every((r) => r.summary.length > 0)).toBe(true);
  });
});
