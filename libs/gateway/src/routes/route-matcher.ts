import { ROUTE_TABLE, servicePath, type RouteSpec } from '@th/contracts';

interface Compiled {
  route: RouteSpec;
  pattern: RegExp;
  params: number;
}

const firstSegment = (p: string) => {
  const end = p.indexOf('/', 1);
  return end < 0 ? p.slice(1) : p.slice(1, end);
};

/** `{name}` matches one segment, `{name*}` the rest of the path; anything else is literal. */
function compile(route: RouteSpec): Compiled {
  const path = servicePath(route.path);
  let params = 0;
  const source = path.replace(/\{(\w+)(\*)?\}|[^{]+/g, (m: string, name?: string, rest?: string) => {
    if (!name) return m.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
    params++;
    return rest ? '.+' : '[^/]+';
  });
  return { route, pattern: new RegExp(`^${source}/*$`), params };
}

/**
 * Finds the route a request names, from a table of routes (the whole ROUTE_TABLE by default), by method and by
 * the path the services' routers see (servicePath). Indexed by method and first path segment, so a request tests
 * only the few patterns under its first segment; literal routes are tried before parameterized ones
 * (`/runs/query` before `/runs/{run_id}`). HEAD is served by GET routes, as Express does.
 */
export class RouteMatcher {
  private readonly index = new Map<string, Compiled[]>();

  constructor(routes: readonly RouteSpec[] = ROUTE_TABLE) {
    for (const route of routes) {
      if (route.internal) continue;
      const c = compile(route);
      const key = `${route.method.toUpperCase()} ${firstSegment(servicePath(route.path))}`;
      const list = this.index.get(key) ?? [];
      list.push(c);
      list.sort((a, b) => a.params - b.params);
      this.index.set(key, list);
    }
  }

  match(method: string, path: string): RouteSpec | null {
    const p = servicePath(path);
    const m = method === 'HEAD' ? 'GET' : method;
    const candidates = this.index.get(`${m} ${firstSegment(p)}`);
    if (candidates === undefined) return null;
    for (const c of candidates) if (c.pattern.test(p)) return c.route;
    return null;
  }
}
