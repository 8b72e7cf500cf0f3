// Reads and parses a run off the main thread: a 20 MB output parsed there would freeze the page for
// hundreds of milliseconds. The page gets the run with its large fields left here, and reads those a
// level at a time (the entries of one object or array, strings cut to a preview).
import { LARGE_FIELD_CHARS, entriesOf, entryOf, type JsonPath, type LargeField, type WorkerReply, type WorkerRequest } from './json-protocol';

/** Runs kept parsed here (the last few opened), so expanding a node does not read the run again. */
const KEPT_DOCS = 4;
const docs = new Map<string, Record<string, unknown>>();

const scope = self as unknown as { onmessage: ((e: MessageEvent<WorkerRequest>) => void) | null; postMessage(m: WorkerReply): void };

function at(doc: unknown, path: JsonPath): unknown {
  let v = doc;
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[k];
  }
  return v;
}

async function load(req: Extract<WorkerRequest, { type: 'load' }>): Promise<WorkerReply> {
  const res = await fetch(req.url, { headers: req.headers, credentials: 'same-origin' });
  const text = await res.text();
  const body: unknown = text ? JSON.parse(text) : null;
  if (!res.ok) return { id: req.id, type: 'error', status: res.status, detail: (body as { detail?: unknown } | null)?.detail ?? null };
  const run = body as Record<string, unknown>;
  // Each field's JSON size decides whether it travels to the page whole or stays here.
  const light: Record<string, unknown> = {};
  const large: Record<string, LargeField> = {};
  for (const [k, v] of Object.entries(run)) {
    const chars = v !== null && typeof v === 'object' ? JSON.stringify(v).length : 0;
    if (chars > LARGE_FIELD_CHARS) large[k] = { ...entryOf(k, v), chars };
    else light[k] = v;
  }
  docs.delete(req.key);
  docs.set(req.key, run);
  while (docs.size > KEPT_DOCS) docs.delete(docs.keys().next().value as string);
  return { id: req.id, type: 'loaded', run: light, large };
}

scope.onmessage = (e) => {
  const req = e.data;
  const reply = async (): Promise<WorkerReply> => {
    if (req.type === 'load') return load(req);
    const doc = docs.get(req.key);
    if (!doc) return { id: req.id, type: 'error', status: 410, detail: 'The run is no longer loaded: open it again' };
    const v = at(doc, req.path);
    if (req.type === 'entries') return { id: req.id, type: 'entries', ...entriesOf(v, req.offset, req.limit) };
    const s = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
    return { id: req.id, type: 'text', text: s.slice(0, req.chars), total: s.length };
  };
  reply().then(scope.postMessage, (err: unknown) => scope.postMessage({ id: req.id, type: 'error', status: 0, detail: err instanceof Error ? err.message : String(err) }));
};
