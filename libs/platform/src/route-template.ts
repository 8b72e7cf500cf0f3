import type { IncomingMessage } from 'node:http';
import { routeSpecOf } from '@th/contracts';

const ROUTE_TEMPLATE = Symbol('th:route-template');
/** Names the route template of a request the Nest router does not see (the gateway's proxied routes). */
export function setRouteTemplate(req: object, template: string): void {
  (req as Record<symbol, string>)[ROUTE_TEMPLATE] = template;
}

/** The route template a request was served by: the route table's path, the router's pattern, or `unmatched`. */
export function routeTemplateOf(req: IncomingMessage & { route?: { path?: unknown } }): string {
  const set = (req as unknown as Record<symbol, string | undefined>)[ROUTE_TEMPLATE];
  if (set !== undefined) return set;
  const routerPath = req.route?.path;
  if (typeof routerPath !== 'string') return 'unmatched';
  return routeSpecOf(req.method ?? 'GET', routerPath)?.path ?? routerPath.replace(/:(\w+)/g, '{$1}');
}
