import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { api } from '../api';
import { fmtCost, fmtInt, fmtLatency, fmtTime } from '../format';
import { Link, paths } from '../router';

/** A thread as POST /api/v2/threads/query answers it (previews are the first inputs and last outputs, cut). */
interface ThreadItem {
  thread_id: string;
  count: number;
  min_start_time: string;
  max_start_time: string;
  first_inputs?: string;
  last_outputs?: string;
  last_error?: string;
  total_tokens?: number;
  total_cost?: number;
}
/** A turn as GET /api/v2/threads/{id}/traces answers it. */
interface TurnItem {
  trace_id: string;
  turn_number: number;
  name?: string;
  start_time?: string;
  latency?: number;
  total_tokens?: number;
  inputs_preview?: string;
  outputs_preview?: string;
  error_preview?: string;
}
interface Page<T> {
  items: T[];
  next_cursor: string;
}

const TURN_SELECTS = ['NAME', 'START_TIME', 'LATENCY', 'TOTAL_TOKENS', 'INPUTS_PREVIEW', 'OUTPUTS_PREVIEW', 'ERROR_PREVIEW'];
/** Pages of turns read for one conversation (100 each), and of threads listed (50 each). */
const MAX_TURN_PAGES = 20;
const THREAD_PAGE = 50;

/** A project's conversations: its traces grouped by the metadata key session_id, conversation_id or thread_id. */
export function ThreadsView({ tenant, project }: { tenant: string; project: string }) {
  const threads = useInfiniteQuery({
    queryKey: ['threads', tenant, project],
    initialPageParam: '',
    queryFn: ({ pageParam, signal }) =>
      api<Page<ThreadItem>>('/api/v2/threads/query', { tenant, signal, json: { project_id: project, page_size: THREAD_PAGE, ...(pageParam ? { cursor: pageParam } : {}) } }),
    getNextPageParam: (last) => last.next_cursor || null,
  });
  const items = threads.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <section aria-labelledby="threads-title" className="threads">
      <p className="crumbs">
        <Link to={paths.projects(tenant)}>Projects</Link> / <Link to={paths.runs(tenant, project)}>Runs</Link> /
      </p>
      <h1 id="threads-title">Threads</h1>
      {threads.isError && <p role="alert" className="error">{threads.error.message}</p>}
      {threads.isPending && <p aria-busy="true">Loading…</p>}
      {threads.data && items.length === 0 && (
        <div className="empty">
          <p>No threads in this project. Runs join a thread by one of these keys in their metadata:</p>
          <pre>{"metadata: { session_id: '<conversation id>' }   // or thread_id, conversation_id"}</pre>
        </div>
      )}
      {items.length > 0 && (
        <table className="grid" aria-label="Threads">
          <thead>
            <tr>
              <th scope="col">Thread</th>
              <th scope="col" className="num">Turns</th>
              <th scope="col">First input</th>
              <th scope="col">Last output</th>
              <th scope="col">Last turn</th>
              <th scope="col" className="num">Tokens</th>
              <th scope="col" className="num">Cost</th>
            </tr>
          </thead>
          <tbody>
            {items.map((t) => (
              <tr key={t.thread_id}>
                <td>
                  <Link to={paths.thread(tenant, project, t.thread_id)}>{t.thread_id}</Link>
                </td>
                <td className="num">{fmtInt(t.count)}</td>
                <td className="preview">{t.first_inputs ?? ''}</td>
                <td className="preview">{t.last_error ? <span className="error">{t.last_error}</span> : (t.last_outputs ?? '')}</td>
                <td>{fmtTime(t.max_start_time)}</td>
                <td className="num">{fmtInt(t.total_tokens)}</td>
                <td className="num">{fmtCost(t.total_cost)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {threads.hasNextPage && (
        <button type="button" onClick={() => void threads.fetchNextPage()} disabled={threads.isFetchingNextPage}>
          More threads
        </button>
      )}
    </section>
  );
}

/** One conversation, turn after turn (oldest first); each turn opens its trace. */
export function ThreadView({ tenant, project, thread }: { tenant: string; project: string; thread: string }) {
  const stats = useQuery({
    queryKey: ['thread-stats', tenant, project, thread],
    queryFn: ({ signal }) =>
      api<{ turns?: number; total_tokens?: number; total_cost?: number }>(
        `/api/v2/threads/${encodeURIComponent(thread)}/stats?session_id=${project}&selects=TURNS&selects=TOTAL_TOKENS&selects=TOTAL_COST`,
        { tenant, signal },
      ),
  });
  const turns = useInfiniteQuery({
    queryKey: ['thread-turns', tenant, project, thread],
    initialPageParam: '',
    queryFn: ({ pageParam, signal }) => {
      const q = new URLSearchParams({ project_id: project, page_size: '100' });
      for (const s of TURN_SELECTS) q.append('selects', s);
      if (pageParam) q.set('cursor', pageParam);
      return api<Page<TurnItem>>(`/api/v2/threads/${encodeURIComponent(thread)}/traces?${q.toString()}`, { tenant, signal });
    },
    getNextPageParam: (last, pages) => (last.next_cursor && pages.length < MAX_TURN_PAGES ? last.next_cursor : null),
  });
  const items = turns.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <section aria-labelledby="thread-title" className="threads">
      <p className="crumbs">
        <Link to={paths.projects(tenant)}>Projects</Link> / <Link to={paths.runs(tenant, project)}>Runs</Link> /{' '}
        <Link to={paths.threads(tenant, project)}>Threads</Link> /
      </p>
      <h1 id="thread-title">Thread · {thread}</h1>
      {stats.data && (
        <p className="muted" data-testid="thread-stats">
          {fmtInt(stats.data.turns)} turns · {fmtInt(stats.data.total_tokens)} tokens · {fmtCost(stats.data.total_cost)}
        </p>
      )}
      {turns.isError && <p role="alert" className="error">{turns.error.message}</p>}
      {turns.isPending && <p aria-busy="true">Loading…</p>}
      <ol aria-label="Turns">
        {items.map((t) => (
          <li key={t.trace_id} className="turn" data-turn={t.turn_number}>
            <div className="turn-head">
              <strong>Turn {t.turn_number}</strong>
              <Link to={paths.trace(tenant, project, t.trace_id)}>{t.name ?? 'trace'}</Link>
              <span className="muted">{fmtTime(t.start_time)} · {fmtLatency(t.latency)}{t.total_tokens ? ` · ${fmtInt(t.total_tokens)} tokens` : ''}</span>
            </div>
            <dl className="facts">
              <dt>Input</dt>
              <dd className="turn-input">{t.inputs_preview ?? ''}</dd>
              <dt>{t.error_preview ? 'Error' : 'Output'}</dt>
              <dd className={t.error_preview ? 'error' : 'turn-output'}>{t.error_preview ?? t.outputs_preview ?? ''}</dd>
            </dl>
          </li>
        ))}
      </ol>
      {turns.hasNextPage && (
        <button type="button" onClick={() => void turns.fetchNextPage()} disabled={turns.isFetchingNextPage}>
          More turns
        </button>
      )}
    </section>
  );
}
