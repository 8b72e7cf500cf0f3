import { useEffect, useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';

// A small history router: every view has its own URL (shareable), and the SDK's links open the app
// at the right view. Routes are few and fixed, so a library would add weight without saving code.
const listeners = new Set<() => void>();
const subscribe = (cb: () => void) => {
  listeners.add(cb);
  window.addEventListener('popstate', cb);
  return () => {
    listeners.delete(cb);
    window.removeEventListener('popstate', cb);
  };
};
const snapshot = () => window.location.pathname + window.location.search + window.location.hash;

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  for (const l of listeners) l();
}

export function useLocation(): URL {
  const href = useSyncExternalStore(subscribe, snapshot);
  return new URL(href, window.location.origin);
}

export function Link({ to, ...rest }: AnchorHTMLAttributes<HTMLAnchorElement> & { to: string }) {
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={to} onClick={onClick} {...rest} />;
}

export function Redirect({ to }: { to: string }) {
  useEffect(() => navigate(to, { replace: true }), [to]);
  return null;
}

/** Sets a query parameter of the current URL (replacing the history entry). */
export function setSearchParam(name: string, value: string | null): void {
  const url = new URL(window.location.href);
  if (value === null || value === '') url.searchParams.delete(name);
  else url.searchParams.set(name, value);
  navigate(url.pathname + url.search, { replace: true });
}

export type Route =
  | { view: 'root' }
  | { view: 'login' }
  | { view: 'projects'; tenant: string }
  | { view: 'runs'; tenant: string; project: string }
  | { view: 'monitor'; tenant: string; project: string }
  | { view: 'trace'; tenant: string; project: string; run: string }
  | { view: 'dataset'; tenant: string; dataset: string }
  | { view: 'threads'; tenant: string; project: string }
  | { view: 'thread'; tenant: string; project: string; thread: string }
  | { view: 'not-found' };

const seg = '([^/]+)';
const ROUTES: [RegExp, (m: string[]) => Route][] = [
  [/^\/$/, () => ({ view: 'root' })],
  [/^\/login\/?$/, () => ({ view: 'login' })],
  [new RegExp(`^/o/${seg}/?(?:projects/?)?$`), (m) => ({ view: 'projects', tenant: m[1] })],
  [new RegExp(`^/o/${seg}/projects/p/${seg}/?$`), (m) => ({ view: 'runs', tenant: m[1], project: m[2] })],
  [new RegExp(`^/o/${seg}/projects/p/${seg}/monitor/?$`), (m) => ({ view: 'monitor', tenant: m[1], project: m[2] })],
  [new RegExp(`^/o/${seg}/projects/p/${seg}/r/${seg}/?$`), (m) => ({ view: 'trace', tenant: m[1], project: m[2], run: m[3] })],
  [new RegExp(`^/o/${seg}/datasets/${seg}(?:/.*)?$`), (m) => ({ view: 'dataset', tenant: m[1], dataset: m[2] })],
  [new RegExp(`^/o/${seg}/projects/p/${seg}/threads/?$`), (m) => ({ view: 'threads', tenant: m[1], project: m[2] })],
  [new RegExp(`^/o/${seg}/projects/p/${seg}/t/${seg}/?$`), (m) => ({ view: 'thread', tenant: m[1], project: m[2], thread: m[3] })],
];

export function matchRoute(pathname: string): Route {
  for (const [re, make] of ROUTES) {
    const m = re.exec(pathname);
    if (m) return make(m.map((s) => decodeURIComponent(s ?? '')));
  }
  return { view: 'not-found' };
}

export const paths = {
  projects: (tenant: string) => `/o/${tenant}/projects`,
  runs: (tenant: string, project: string) => `/o/${tenant}/projects/p/${project}`,
  monitor: (tenant: string, project: string) => `/o/${tenant}/projects/p/${project}/monitor`,
  trace: (tenant: string, project: string, run: string) => `/o/${tenant}/projects/p/${project}/r/${run}`,
  dataset: (tenant: string, dataset: string) => `/o/${tenant}/datasets/${dataset}`,
  /** The SDK's experiment-comparison link. */
  compare: (tenant: string, dataset: string, sessions: string[]) => `/o/${tenant}/datasets/${dataset}/compare?selectedSessions=${sessions.join(',')}`,
  threads: (tenant: string, project: string) => `/o/${tenant}/projects/p/${project}/threads`,
  thread: (tenant: string, project: string, thread: string) => `/o/${tenant}/projects/p/${project}/t/${encodeURIComponent(thread)}`,
};
