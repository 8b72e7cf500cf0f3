import { useQuery } from '@tanstack/react-query';
import type { Dataset, Example } from '@th/contracts';
import { api } from '../api';
import { fmtTime } from '../format';
import { Link, paths } from '../router';

/** A dataset's examples (the SDK links here, including its experiment-comparison links). */
export function DatasetView({ tenant, dataset }: { tenant: string; dataset: string }) {
  const info = useQuery({ queryKey: ['dataset', tenant, dataset], queryFn: ({ signal }) => api<Dataset>(`/datasets/${dataset}`, { tenant, signal }) });
  const examples = useQuery({
    queryKey: ['examples', tenant, dataset],
    queryFn: ({ signal }) => api<Example[]>(`/examples?dataset=${dataset}&limit=100`, { tenant, signal }),
  });
  return (
    <section aria-labelledby="dataset-title">
      <p className="crumbs">
        <Link to={paths.projects(tenant)}>Projects</Link> /
      </p>
      <h1 id="dataset-title">Dataset {info.data ? `· ${info.data.name}` : ''}</h1>
      {info.isError && <p role="alert" className="error">{info.error.message}</p>}
      {info.data?.description && <p>{info.data.description}</p>}
      {examples.isError && <p role="alert" className="error">{examples.error.message}</p>}
      {examples.data && (
        <table className="grid" aria-label="Examples">
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
                <td><code>{JSON.stringify(e.inputs).slice(0, 200)}</code></td>
                <td><code>{JSON.stringify(e.outputs ?? null).slice(0, 200)}</code></td>
                <td>{fmtTime(e.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {examples.data?.length === 0 && <p className="muted">No examples.</p>}
    </section>
  );
}
