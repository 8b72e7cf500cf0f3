import { API_ROUTES } from './api.routes';
import { CONTROL_PLANE_ROUTES } from './control-plane.routes';
import { INTERNAL_ROUTES } from './internal.routes';
import { servicePath, type RouteSpec } from './route';

export * from './route';
export { API_ROUTES } from './api.routes';
export { CONTROL_PLANE_ROUTES } from './control-plane.routes';
export { INTERNAL_ROUTES } from './internal.routes';
export { AGENT_SERVER_ROUTES } from './agent-server.routes';

/**
 * Every HTTP route of the API the gateway fronts (every app but the agent server, whose API is AGENT_SERVER_ROUTES).
 * A new endpoint is one entry in the list of its document (API_ROUTES, the gateway's /openapi.json;
 * CONTROL_PLANE_ROUTES, /v2/openapi.json; INTERNAL_ROUTES, not published) and its controller method.
 */
export const ROUTE_TABLE: readonly RouteSpec[] = [...API_ROUTES, ...CONTROL_PLANE_ROUTES, ...INTERNAL_ROUTES];

const toTemplate = (routerPath: string) => routerPath.replace(/:(\w+)/g, '{$1}').replace(/\*(\w+)/g, '{$1*}');
const routeKey = (method: string, template: string) => `${method.toUpperCase()} ${servicePath(template)}`;
let byRouterPath: Map<string, RouteSpec> | undefined;

/**
 * The table's entry for a route as a service's router registered it (Express `req.route.path`, e.g.
 * `/datasets/:dataset_id`), or undefined.
 */
export function routeSpecOf(method: string, routerPath: string): RouteSpec | undefined {
  byRouterPath ??= new Map(ROUTE_TABLE.map((r) => [routeKey(r.method, r.path), r]));
  return byRouterPath.get(routeKey(method, toTemplate(routerPath)));
}
