import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import type { Dataset, Example, Experiment, ExperimentCompareResponse, Feedback } from '@th/contracts';
import { api } from '../api';
import { fmtCost, fmtInt, fmtLatency, fmtPct, fmtTime } from '../format';
import { Link, paths, setSearchParam, useLocation } from '../router';

const EXAMPLES_PAGE = 100;
const COMPARE_PAGE = 50;

type Json = Record<string, unknown>;
type FeedbackStats = Record<string, { n?: number; avg?: number | null; values?: Record<string, number> }>;

const preview = (v: unknown, max = 400): string => {
  const s = JSON.stringify(v ?? null);
  return s.length > max ? `${s.slice(0, max)}…` : s;
};
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const fmtScore = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : Number.isInteger(n) ? String(n) : n.toFixed(2));
const latencyOf = (r: Json): number | null => {
  const s = typeof r.start_time === 'string' ? Date.parse(r.start_time.endsWith('Z') ? r.start_time : `${r.start_time}Z`) : NaN;
  const e = typeof r.end_time === 'string' ? Date.parse(r.end_time.endsWith('Z') ? r.end_time : `${r.end_time}Z`) : NaN;
  return Number.isNaN(s) || Number.isNaN(e) ? null : (e - s) / 1000;
};
/** The mean score of each feedback key of one run. */
function scoresOf(feedback: Feedback[] | undefined): Map<string, number> {
  const sums = new Map<string, [number, number]>();
  for (const f of feedback ?? []) {
    const s = num(f.score);
    if (s === null) continue;
    const [t, n] = sums.get(f.key) ?? [0, 0];
    sums.set(f.key, [t + s, n + 1]);
  }
  return new Map([...sums].map(([k, [t, n]]) => [k, t / n]));
}
const statKeys = (stats: unknown): string[] => Object.keys((stats as FeedbackStats | null) ?? {}).sort();
const statAvg = (stats: unknown, key: string): number | null => num((stats as FeedbackStats | null)?.[key]?.avg);

/** A dataset (the SDK links here) and its experiment comparison (`.../compare?selectedSessions=a,b`). */
export function DatasetView({ tenant, dataset }: { tenant: string; dataset: string }) {
  const loc = useLocation();
  const info = useQuery({ queryKey: ['dataset', tenant, dataset], queryFn: ({ signal }) => api<Dataset>(`/datasets/${dataset}`, { tenant, signal }) });
  const comparing = /\/compare\/?$/.test(loc.pathname);
  const selected = (loc.searchParams.get('selectedSessions') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  return (
    <section aria-labelledby="dataset-title">
      <p className="crumbs">
        <Link to={paths.projects(tenant)}>Projects</Link> / {comparing && <><Link to={paths.dataset(tenant, dataset)}>Dataset</Link> /</>}
      </p>
      <h1 id="dataset-title">
        {comparing ? 'Compare experiments' : 'Dataset'} {info.data ? `· ${info.data.name}` : ''}
      </h1>
      {info.isError && <p role="alert" className="error">{info.error.message}</p>}
      {!comparing && info.data?.description && <p>{info.data.description}</p>}
      {comparing ? <Compare tenant={tenant} dataset={dataset} sessions={selected} /> : <DatasetHome tenant={tenant} dataset={dataset} />}
    </section>
  );
}

function DatasetHome({ tenant, dataset }: { tenant: string; dataset: string }) {
  const [offset, setOffset] = useState(0);
  const [picked, setPicked] = useState<string[]>([]);
  const experiments = useQuery({
    queryKey: ['experiments', tenant, dataset],
    queryFn: ({ signal }) => api<Experiment[]>(`/sessions?reference_dataset=${dataset}&include_stats=true&limit=100`, { tenant, signal }),
  });
  const examples = useQuery({
    queryKey: ['examples', tenant, dataset, offset],
    queryFn: ({ signal }) => api<Example[]>(`/examples?dataset=${dataset}&offset=${offset}&limit=${EXAMPLES_PAGE}`, { tenant, signal }),
    placeholderData: (prev) => prev,
  });
  const feedbackKeys = [...new Set((experiments.data ?? []).flatMap((e) => statKeys(e.feedback_stats)))].sort();
  const toggle = (id: string) => setPicked((p) => (p.includes(id) ? p.filter((x) => x !== id) : [...p, id]));
  return (
    <>
      <h2 id="experiments-title">Experiments</h2>
      {experiments.isError && <p role="alert" className="error">{experiments.error.message}</p>}
      {experiments.data && experiments.data.length === 0 && <p className="muted">No experiments on this dataset yet: run <code>evaluate()</code> with it.</p>}
      {experiments.data && experiments.data.length > 0 && (
        <>
          <div className="toolbar">
            {picked.length >= 2 ? (
              <Link to={paths.compare(tenant, dataset, picked)} className="button">Compare {picked.length} experiments</Link>
            ) : (
              <span className="muted">Select two or more experiments to compare.</span>
            )}
          </div>
          <table className="grid" aria-labelledby="experiments-title">
            <thead>
              <tr>
                <th scope="col">Compare</th>
                <th scope="col">Experiment</th>
                <th scope="col">Created</th>
                <th scope="col">Runs</th>
                {feedbackKeys.map((k) => <th scope="col" key={k}>{k}</th>)}
                <th scope="col">Error rate</th>
                <th scope="col">Latency p50</th>
                <th scope="col">Latency p99</th>
                <th scope="col">Tokens</th>
                <th scope="col">Cost</th>
              </tr>
            </thead>
            <tbody>
              {experiments.data.map((e) => (
                <tr key={e.id}>
                  <td><input type="checkbox" aria-label={`Select ${e.name}`} checked={picked.includes(e.id)} onChange={() => toggle(e.id)} /></td>
                  <td><Link to={paths.runs(tenant, e.id)}>{e.name}</Link></td>
                  <td>{fmtTime(e.start_time)}</td>
                  <td>{fmtInt(e.run_count)}</td>
                  {feedbackKeys.map((k) => <td key={k} data-feedback={k}>{fmtScore(statAvg(e.feedback_stats, k))}</td>)}
                  <td>{fmtPct(e.error_rate)}</td>
                  <td>{fmtLatency(e.latency_p50)}</td>
                  <td>{fmtLatency(e.latency_p99)}</td>
                  <td>{fmtInt(e.total_tokens)}</td>
                  <td>{fmtCost(e.total_cost)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <h2 id="examples-title">Examples</h2>
      {examples.isError && <p role="alert" className="error">{examples.error.message}</p>}
      {examples.data && examples.data.length > 0 && (
        <table className="grid" aria-labelledby="examples-title">
          <thead>
            <tr>
              <th scope="col">Inputs</th>
              <th scope="col">Outputs</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {examples.data.map((e) => (
              <tr key={e.id}>
                <td><code>{preview(e.inputs, 200)}</code></td>
                <td><code>{preview(e.outputs, 200)}</code></td>
                <td>{fmtTime(e.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {examples.data?.length === 0 && offset === 0 && <p className="muted">No examples.</p>}
      <Pager offset={offset} size={EXAMPLES_PAGE} count={examples.data?.length ?? 0} onChange={setOffset} label="Examples pages" />
    </>
  );
}

function Pager({ offset, size, count, onChange, label }: { offset: number; size: number; count: number; onChange: (o: number) => void; label: string }) {
  if (offset === 0 && count < size) return null;
  return (
    <nav className="toolbar" aria-label={label}>
      <button type="button" disabled={offset === 0} onClick={() => onChange(Math.max(0, offset - size))}>Previous</button>
      <span className="muted">{count === 0 ? `${offset}` : `${offset + 1}–${offset + count}`}</span>
      <button type="button" disabled={count < size} onClick={() => onChange(offset + size)}>Next</button>
    </nav>
  );
}

/** One row per example: inputs, reference outputs, then each experiment's output, scores, latency and tokens. */
function Compare({ tenant, dataset, sessions }: { tenant: string; dataset: string; sessions: string[] }) {
  const loc = useLocation();
  const offset = Math.max(0, Number.parseInt(loc.searchParams.get('offset') ?? '0', 10) || 0);
  const cmp = useQuery({
    queryKey: ['compare', tenant, dataset, sessions.join(','), offset],
    queryFn: ({ signal }) =>
      api<ExperimentCompareResponse>(`/datasets/${dataset}/compare`, { tenant, signal, json: { session_ids: sessions, offset, limit: COMPARE_PAGE } }),
    enabled: sessions.length > 0,
    placeholderData: (prev) => prev,
  });
  if (sessions.length === 0) return <p className="muted">No experiments selected: choose them on the <Link to={paths.dataset(tenant, dataset)}>dataset page</Link>.</p>;
  if (cmp.isError) return <p role="alert" className="error">{cmp.error.message}</p>;
  if (!cmp.data) return <p className="muted" aria-live="polite">Loading…</p>;
  const { experiments, examples } = cmp.data;
  const keys = [...new Set(experiments.flatMap((e) => statKeys(e.feedback_stats)))].sort();
  const baseline = experiments[0];
  return (
    <>
      <table className="grid compare-summary" aria-label="Experiments compared">
        <thead>
          <tr>
            <th scope="col">Experiment</th>
            <th scope="col">Runs</th>
            {keys.map((k) => <th scope="col" key={k}>{k}</th>)}
            <th scope="col">Latency p50</th>
            <th scope="col">Tokens</th>
            <th scope="col">Cost</th>
          </tr>
        </thead>
        <tbody>
          {experiments.map((e, i) => (
            <tr key={e.id}>
              <th scope="row"><Link to={paths.runs(tenant, e.id)}>{e.name}</Link>{i === 0 && <span className="muted"> (baseline)</span>}</th>
              <td>{fmtInt(e.run_count)}</td>
              {keys.map((k) => (
                <td key={k} data-feedback={k}>
                  <Score value={statAvg(e.feedback_stats, k)} base={i === 0 ? null : statAvg(baseline.feedback_stats, k)} />
                </td>
              ))}
              <td>{fmtLatency(e.latency_p50)}</td>
              <td>{fmtInt(e.total_tokens)}</td>
              <td>{fmtCost(e.total_cost)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="compare-wrap">
        <table className="grid compare" aria-label="Examples compared">
          <thead>
            <tr>
              <th scope="col">Inputs</th>
              <th scope="col">Reference outputs</th>
              {experiments.map((e) => <th scope="col" key={e.id}>{e.name}</th>)}
            </tr>
          </thead>
          <tbody>
            {examples.map((ex) => {
              const runs = experiments.map((e) => ex.runs.find((r) => r.session_id === e.id) as (Json & { id: string; feedback: Feedback[] }) | undefined);
              const baseScores = scoresOf(runs[0]?.feedback);
              return (
                <tr key={ex.id} data-example={ex.id}>
                  <td><code>{preview(ex.inputs)}</code></td>
                  <td><code>{preview(ex.outputs)}</code></td>
                  {runs.map((r, i) => (
                    <td key={experiments[i].id} data-session={experiments[i].id}>
                      {r ? <RunCell tenant={tenant} run={r} base={i === 0 ? null : baseScores} /> : <span className="muted">No run</span>}
                    </td>
                  ))}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {examples.length === 0 && offset === 0 && <p className="muted">The dataset has no examples.</p>}
      <Pager offset={offset} size={COMPARE_PAGE} count={examples.length} onChange={(o) => setSearchParam('offset', o === 0 ? null : String(o))} label="Comparison pages" />
    </>
  );
}

function Score({ value, base }: { value: number | null; base: number | null }) {
  const cls = value === null || base === null || value === base ? '' : value > base ? 'better' : 'worse';
  return (
    <span className={`score ${cls}`} data-trend={cls || undefined}>
      {fmtScore(value)}
      {cls && <span className="visually-hidden">{cls === 'better' ? ' (better than baseline)' : ' (worse than baseline)'}</span>}
      {cls && <span aria-hidden="true">{cls === 'better' ? ' ▲' : ' ▼'}</span>}
    </span>
  );
}

function RunCell({ tenant, run, base }: { tenant: string; run: Json & { id: string; feedback: Feedback[] }; base: Map<string, number> | null }) {
  const scores = scoresOf(run.feedback);
  const project = String(run.session_id);
  const trace = typeof run.trace_id === 'string' && run.trace_id !== run.id ? run.trace_id : run.id;
  return (
    <div className="run-cell">
      <Link to={paths.trace(tenant, project, trace)} title="Open this run's trace" className="run-output">
        <code>{run.error ? String(run.error) : preview(run.outputs)}</code>
      </Link>
      {scores.size > 0 && (
        <ul className="scores">
          {[...scores].map(([k, v]) => (
            <li key={k} data-feedback={k}>
              {k}: <Score value={v} base={base?.get(k) ?? null} />
            </li>
          ))}
        </ul>
      )}
      <span className="muted">{fmtLatency(latencyOf(run))} · {fmtInt(num(run.total_tokens))} tokens</span>
    </div>
  );
}
