import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { Workspace } from '@th/contracts';
import { api, ApiError, type SessionInfo } from './api';
import { Link, Redirect, matchRoute, navigate, paths, useLocation } from './router';
import { LoginView } from './views/login';
import { ProjectsView } from './views/projects';
import { RunsView } from './views/runs';
import { MonitoringView } from './views/monitoring';
import { TraceView } from './views/trace';
import { DatasetView } from './views/dataset';
import { ThreadView, ThreadsView } from './views/threads';
import { ThemeToggle } from './theme';

export function useSession() {
  return useQuery<SessionInfo | null>({
    queryKey: ['session'],
    queryFn: async () => {
      try {
        return await api<SessionInfo>('/auth/session');
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) return null;
        throw err;
      }
    },
    staleTime: 60_000,
  });
}

export function App() {
  const location = useLocation();
  const route = matchRoute(location.pathname);
  const session = useSession();
  if (route.view === 'login') return <LoginView />;
  if (session.isError) return <main className="center"><p role="alert">{session.error.message}</p></main>;
  if (session.data === null) {
    const next = location.pathname + location.search;
    return <Redirect to={`/login?next=${encodeURIComponent(next)}`} />;
  }
  // A view whose URL names the workspace starts its reads while the session is checked, not after it.
  const tenant = 'tenant' in route ? route.tenant : session.data?.tenant_id;
  if (!tenant) return <main className="center" aria-busy="true">Loading…</main>;
  return (
    <>
      {session.data && <Header tenant={tenant} session={session.data} />}
      <main id="main">
        {route.view === 'root' && session.data && <Redirect to={paths.projects(session.data.tenant_id)} />}
        {route.view === 'projects' && <ProjectsView tenant={route.tenant} />}
        {route.view === 'runs' && <RunsView tenant={route.tenant} project={route.project} />}
        {route.view === 'monitor' && <MonitoringView tenant={route.tenant} project={route.project} />}
        {route.view === 'trace' && <TraceView tenant={route.tenant} project={route.project} runId={route.run} poll={location.searchParams.get('poll') === 'true'} />}
        {route.view === 'dataset' && <DatasetView tenant={route.tenant} dataset={route.dataset} />}
        {route.view === 'threads' && <ThreadsView tenant={route.tenant} project={route.project} />}
        {route.view === 'thread' && <ThreadView tenant={route.tenant} project={route.project} thread={route.thread} />}
        {route.view === 'not-found' && (
          <section>
            <h1>Not found</h1>
            <p>
              No page at <code>{location.pathname}</code>. <Link to={paths.projects(tenant)}>Projects</Link>
            </p>
          </section>
        )}
      </main>
    </>
  );
}

function Header({ tenant, session }: { tenant: string; session: SessionInfo }) {
  const qc = useQueryClient();
  const signOut = async () => {
    await api('/auth/session', { method: 'DELETE' });
    qc.clear();
    navigate('/login');
  };
  return (
    <header className="top">
      <nav aria-label="Main">
        <Link to={paths.projects(tenant)} className="brand">Tracehouse</Link>
        <Link to={paths.projects(tenant)}>Projects</Link>
      </nav>
      <div className="who">
        <ThemeToggle />
        <WorkspaceSwitcher tenant={tenant} />
        <button type="button" onClick={() => void signOut()}>Sign out</button>
      </div>
    </header>
  );
}

/** The workspaces of the session's organization; choosing one opens its projects (the URL names the workspace). */
function WorkspaceSwitcher({ tenant }: { tenant: string }) {
  const workspaces = useQuery({ queryKey: ['workspaces'], queryFn: ({ signal }) => api<Workspace[]>('/workspaces', { signal }), staleTime: 60_000 });
  const list = workspaces.data ?? [];
  if (list.length <= 1) {
    return (
      <span>
        Workspace <strong>{list[0]?.name ?? tenant.slice(0, 8)}</strong>
      </span>
    );
  }
  return (
    <label>
      Workspace{' '}
      <select value={tenant} onChange={(e) => navigate(paths.projects(e.target.value))}>
        {!list.some((w) => w.id === tenant) && <option value={tenant}>{tenant.slice(0, 8)}</option>}
        {list.map((w) => (
          <option key={w.id} value={w.id}>
            {w.name}
          </option>
        ))}
      </select>
    </label>
  );
}
