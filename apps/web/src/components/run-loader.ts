import type { RunResponse } from '@th/contracts';
import { ApiError, CSRF_HEADER, CSRF_VALUE } from '../api';
import { entriesOf, entryOf, type JsonEntry, type JsonPath, type LargeField, type WorkerReply, type WorkerRequest } from './json-protocol';

/** Where a JSON value's entries come from: the page's memory (small values) or the worker (large fields). */
export interface JsonSource {
  root: JsonEntry;
  entries(path: JsonPath, offset: number, limit: number): Promise<{ entries: JsonEntry[]; total: number }> | { entries: JsonEntry[]; total: number };
  text(path: JsonPath, chars: number): Promise<{ text: string; total: number }>;
}

let worker: Worker | null = null;
let seq = 0;
const pending = new Map<number, { resolve: (r: WorkerReply) => void; reject: (e: Error) => void }>();

type Unsent = WorkerRequest extends infer R ? (R extends WorkerRequest ? Omit<R, 'id'> : never) : never;

function call(req: Unsent): Promise<WorkerReply> {
  if (!worker) {
    worker = new Worker(new URL('./json.worker.ts', import.meta.url), { type: 'module', name: 'json' });
    worker.onmessage = (e: MessageEvent<WorkerReply>) => {
      const p = pending.get(e.data.id);
      pending.delete(e.data.id);
      if (!p) return;
      if (e.data.type === 'error') p.reject(new ApiError(e.data.status, e.data.detail));
      else p.resolve(e.data);
    };
  }
  const id = ++seq;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker?.postMessage({ ...req, id } as WorkerRequest);
  });
}

export interface LoadedRun {
  run: RunResponse;
  /** The fields left in the worker, with their JSON length. */
  large: Record<string, LargeField>;
  key: string;
}

/** GET /runs/{id}, read and parsed in the worker. */
export async function loadRun(tenant: string, runId: string): Promise<LoadedRun> {
  const key = `${tenant}/${runId}/${++seq}`;
  const headers = { accept: 'application/json', [CSRF_HEADER]: CSRF_VALUE, 'x-tenant-id': tenant };
  const reply = await call({ type: 'load', key, url: `/api/v1/runs/${runId}`, headers });
  if (reply.type !== 'loaded') throw new Error('unexpected reply');
  return { run: reply.run as unknown as RunResponse, large: reply.large, key };
}

/** A field of a loaded run that stayed in the worker. */
export function workerSource(loaded: LoadedRun, field: string): JsonSource {
  return {
    root: loaded.large[field],
    entries: async (path, offset, limit) => {
      const r = await call({ type: 'entries', key: loaded.key, path: [field, ...path], offset, limit });
      return r.type === 'entries' ? { entries: r.entries, total: r.total } : { entries: [], total: 0 };
    },
    text: async (path, chars) => {
      const r = await call({ type: 'text', key: loaded.key, path: [field, ...path], chars });
      return r.type === 'text' ? { text: r.text, total: r.total } : { text: '', total: 0 };
    },
  };
}

/** A value held by the page. */
export function localSource(value: unknown): JsonSource {
  const at = (path: JsonPath) => path.reduce<unknown>((v, k) => (v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined), value);
  return {
    root: entryOf('', value),
    entries: (path, offset, limit) => entriesOf(at(path), offset, limit),
    text: (path, chars) => {
      const v = at(path);
      const s = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
      return Promise.resolve({ text: s.slice(0, chars), total: s.length });
    },
  };
}
