import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { SavedFilter } from '@th/contracts';
import { api } from '../api';
import { setSearchParam } from '../router';

/** The project's saved filters (stored by the service per workspace and project): apply, save the current one, delete. */
export function SavedFilters({ tenant, project, filter }: { tenant: string; project: string; filter: string }) {
  const qc = useQueryClient();
  const key = ['saved-filters', tenant, project];
  const list = useQuery({ queryKey: key, queryFn: ({ signal }) => api<SavedFilter[]>(`/sessions/${project}/filters`, { tenant, signal }) });
  const [name, setName] = useState('');
  const save = useMutation({
    mutationFn: () => api<SavedFilter>(`/sessions/${project}/filters`, { tenant, json: { name: name.trim(), filter } }),
    onSuccess: async () => {
      setName('');
      await qc.invalidateQueries({ queryKey: key });
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) => api(`/sessions/${project}/filters/${id}`, { tenant, method: 'DELETE' }),
    onSuccess: () => qc.invalidateQueries({ queryKey: key }),
  });
  const current = list.data?.find((f) => f.filter === filter);
  const error = save.error ?? remove.error ?? list.error;
  return (
    <div className="toolbar saved-filters">
      <label>
        Saved views{' '}
        <select value={current?.id ?? ''} onChange={(e) => setSearchParam('filter', list.data?.find((f) => f.id === e.target.value)?.filter ?? null)}>
          <option value="">{list.data?.length ? 'Choose a saved view…' : 'None saved yet'}</option>
          {list.data?.map((f) => (
            <option key={f.id} value={f.id}>
              {f.name}
            </option>
          ))}
        </select>
      </label>
      {current && (
        <button type="button" onClick={() => remove.mutate(current.id)} disabled={remove.isPending}>
          Delete “{current.name}”
        </button>
      )}
      {filter && !current && (
        <form
          className="toolbar"
          aria-label="Save as a view"
          onSubmit={(e) => {
            e.preventDefault();
            if (name.trim()) save.mutate();
          }}
        >
          <label>
            Name this view <input name="view-name" value={name} maxLength={200} required onChange={(e) => setName(e.target.value)} />
          </label>
          <button type="submit" disabled={save.isPending}>Save</button>
        </form>
      )}
      {error && <p role="alert" className="error">{error.message}</p>}
    </div>
  );
}
