import { useEffect, useRef, useState } from 'react';
import type { FilterEditorHandle } from './filter-editor-cm';
import type { KnownValues } from './filter-language';

/**
 * The filter editor: CodeMirror with completion of operators, fields and known values, and the
 * server's parse error marked at its position. Enter (or Apply) submits.
 */
export function FilterEditor(props: {
  value: string;
  known: KnownValues;
  error: { position: number; message: string } | null;
  onSubmit: (text: string) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const handle = useRef<FilterEditorHandle | null>(null);
  const text = useRef(props.value);
  const known = useRef(props.known);
  known.current = props.known;
  const submit = useRef(props.onSubmit);
  submit.current = props.onSubmit;
  const [ready, setReady] = useState(false);

  useEffect(() => {
    let cancelled = false;
    void import('./filter-editor-cm').then(({ createFilterEditor }) => {
      if (cancelled || !box.current) return;
      const root = box.current.shadowRoot ?? box.current.attachShadow({ mode: 'open' });
      const parent = document.createElement('div');
      root.replaceChildren(parent);
      handle.current = createFilterEditor({
        root,
        parent,
        text: text.current,
        label: 'Filter',
        known: () => known.current,
        onSubmit: (t) => submit.current(t),
        onChange: (t) => (text.current = t),
      });
      setReady(true);
    });
    return () => {
      cancelled = true;
      handle.current?.destroy();
      handle.current = null;
    };
  }, []);
  useEffect(() => {
    text.current = props.value;
    handle.current?.setText(props.value);
  }, [props.value, ready]);
  useEffect(() => handle.current?.showError(props.error), [props.error, ready]);

  return (
    <form
      className="toolbar filter"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        props.onSubmit(text.current);
      }}
    >
      <div className="grow">
        <span className="label" aria-hidden="true">Filter</span>
        <div ref={box} className="cm-box mono" aria-busy={!ready} />
      </div>
      <button type="submit">Apply</button>
    </form>
  );
}
