import { useEffect, useMemo, useReducer, useRef, useState } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { JsonEntry, JsonPath } from './json-protocol';
import type { JsonSource } from './run-loader';

/** Entries read per object or array at a time ("Show more" reads the next). */
const PAGE = 500;
/** A small value opens level after level while it shows no more than this many rows. */
const OPEN_ROWS = 200;
/** Characters of one string shown in full on request. */
const TEXT_CHARS = 100_000;
const ROW_PX = 22;

type Row =
  | { kind: 'entry'; path: JsonPath; depth: number; entry: JsonEntry }
  | { kind: 'more'; path: JsonPath; depth: number; left: number }
  | { kind: 'loading'; path: JsonPath; depth: number };

const keyOf = (path: JsonPath) => JSON.stringify(path);
const isContainer = (e: JsonEntry) => e.kind === 'object' || e.kind === 'array';

/**
 * A JSON value as rows, one per entry, read a level at a time from its source and virtualized: a 20 MB
 * output shows its first level at once, and each object or array is read when it is opened.
 */
export function LazyJson(props: { source: JsonSource; label: string }) {
  // Another value is another viewer: what was read and opened belongs to its source.
  return <SourceRows key={idOf(props.source)} {...props} />;
}

const ids = new WeakMap<JsonSource, number>();
let lastId = 0;
const idOf = (s: JsonSource): number => {
  let id = ids.get(s);
  if (id === undefined) ids.set(s, (id = ++lastId));
  return id;
};

function SourceRows({ source, label }: { source: JsonSource; label: string }) {
  const loaded = useRef(new Map<string, { entries: JsonEntry[]; total: number }>());
  const [version, bump] = useReducer((n: number) => n + 1, 0);
  const [open, setOpen] = useState<ReadonlySet<string>>(() => initiallyOpen(source, loaded.current));
  const [text, setText] = useState<{ path: JsonPath; text: string; total: number } | null>(null);
  const inflight = useRef(new Set<string>());

  const read = (path: JsonPath, offset: number) => {
    const k = keyOf(path);
    if (inflight.current.has(k)) return;
    inflight.current.add(k);
    void Promise.resolve(source.entries(path, offset, PAGE)).then(
      (r) => {
        const prev = loaded.current.get(k);
        loaded.current.set(k, { entries: offset > 0 && prev ? [...prev.entries, ...r.entries] : r.entries, total: r.total });
        inflight.current.delete(k);
        bump();
      },
      () => inflight.current.delete(k),
    );
  };

  const rows = useMemo(() => {
    const out: Row[] = [];
    const walk = (path: JsonPath, depth: number) => {
      const got = loaded.current.get(keyOf(path));
      if (!got) {
        out.push({ kind: 'loading', path, depth });
        return;
      }
      for (const e of got.entries) {
        const p = [...path, e.key];
        out.push({ kind: 'entry', path: p, depth, entry: e });
        if (isContainer(e) && open.has(keyOf(p))) walk(p, depth + 1);
      }
      if (got.total > got.entries.length) out.push({ kind: 'more', path, depth, left: got.total - got.entries.length });
    };
    if (isContainer(source.root)) walk([], 0);
    return out;
    // `loaded` is a ref: `version` changes whenever it does.
  }, [open, source, version]);

  useEffect(() => {
    for (const r of rows) if (r.kind === 'loading') read(r.path, 0);
  });

  const scroller = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({ count: rows.length, getScrollElement: () => scroller.current, estimateSize: () => ROW_PX, overscan: 30 });
  const toggle = (path: JsonPath) =>
    setOpen((prev) => {
      const next = new Set(prev);
      const k = keyOf(path);
      if (next.has(k)) next.delete(k);
      else next.add(k);
      return next;
    });
  const showText = (path: JsonPath) => void source.text(path, TEXT_CHARS).then((t) => setText({ path, ...t }));

  if (!isContainer(source.root)) {
    return (
      <div className="json" role="group" aria-label={`${label} (JSON)`}>
        <pre tabIndex={0}>{source.root.kind === 'string' ? JSON.stringify(source.root.preview) : (source.root.preview ?? 'null')}</pre>
        {source.root.kind === 'string' && source.root.size > (source.root.preview?.length ?? 0) && <TextButton onClick={() => showText([])} size={source.root.size} />}
        {text && <FullText {...text} />}
      </div>
    );
  }
  return (
    <div className="json" role="group" aria-label={`${label} (JSON)`}>
      <div className="json-rows" ref={scroller} tabIndex={0} data-testid="json-rows" style={{ height: Math.min(420, Math.max(1, rows.length) * ROW_PX + 8) }}>
        <div style={{ height: virtual.getTotalSize(), position: 'relative' }}>
          {virtual.getVirtualItems().map(({ index, start }) => {
            const r = rows[index];
            const style = { transform: `translateY(${start}px)`, paddingLeft: r.depth * 14 + 4, height: ROW_PX };
            if (r.kind === 'loading') return <div key={index} className="json-row muted" style={style} aria-busy="true">Loading…</div>;
            if (r.kind === 'more') {
              return (
                <div key={index} className="json-row" style={style}>
                  <button type="button" className="link" onClick={() => read(r.path, loaded.current.get(keyOf(r.path))?.entries.length ?? 0)}>
                    Show more ({r.left.toLocaleString('en-US')} left)
                  </button>
                </div>
              );
            }
            const e = r.entry;
            const k = keyOf(r.path);
            return (
              <div key={k} className="json-row" style={style} data-path={r.path.join('.')}>
                {isContainer(e) ? (
                  <button type="button" className="json-toggle" aria-expanded={open.has(k)} onClick={() => toggle(r.path)}>
                    {open.has(k) ? '▾' : '▸'} <span className="json-key">{String(e.key)}</span>{' '}
                    <span className="muted">{e.kind === 'array' ? `[${e.size.toLocaleString('en-US')}]` : `{${e.size.toLocaleString('en-US')}}`}</span>
                  </button>
                ) : (
                  <>
                    <span className="json-key">{String(e.key)}:</span>{' '}
                    <span className={`json-${e.kind}`}>{e.kind === 'string' ? JSON.stringify(e.preview) : e.preview}</span>
                    {e.kind === 'string' && e.size > (e.preview?.length ?? 0) && <TextButton onClick={() => showText(r.path)} size={e.size} />}
                  </>
                )}
              </div>
            );
          })}
        </div>
      </div>
      {text && <FullText {...text} />}
    </div>
  );
}

function TextButton({ onClick, size }: { onClick: () => void; size: number }) {
  return (
    <button type="button" className="link" onClick={onClick}>
      … all {size.toLocaleString('en-US')} characters
    </button>
  );
}

function FullText({ path, text, total }: { path: JsonPath; text: string; total: number }) {
  return (
    <figure className="json-text">
      <figcaption className="muted">
        {path.length ? path.join('.') : 'value'}
        {total > text.length ? ` (first ${text.length.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} characters)` : ''}
      </figcaption>
      <pre tabIndex={0}>{text}</pre>
    </figure>
  );
}

/** The paths opened at first: a value read synchronously (the page's own) opens level by level while it stays small. */
function initiallyOpen(source: JsonSource, loaded: Map<string, { entries: JsonEntry[]; total: number }>): Set<string> {
  const open = new Set<string>();
  if (!isContainer(source.root)) return open;
  let level: JsonPath[] = [[]];
  let rows = 0;
  while (level.length) {
    const next: JsonPath[] = [];
    for (const path of level) {
      const got = source.entries(path, 0, PAGE);
      if (got instanceof Promise) return open;
      loaded.set(keyOf(path), got);
      rows += got.entries.length;
      if (rows > OPEN_ROWS) return open;
      if (path.length) open.add(keyOf(path));
      for (const e of got.entries) if (isContainer(e)) next.push([...path, e.key]);
    }
    level = next;
  }
  return open;
}
