import { useMemo, useState } from 'react';

/** Characters shown before "Show all": a large output must not freeze the page when a run is opened. */
const PREVIEW_CHARS = 100_000;

export function JsonView({ value, label }: { value: unknown; label: string }) {
  const [all, setAll] = useState(false);
  const text = useMemo(() => (value === null || value === undefined ? 'null' : JSON.stringify(value, null, 2)), [value]);
  const cut = !all && text.length > PREVIEW_CHARS;
  return (
    <div className="json">
      <pre tabIndex={0} aria-label={`${label} (JSON)`}>{cut ? `${text.slice(0, PREVIEW_CHARS)}\n…` : text}</pre>
      {cut && (
        <button type="button" onClick={() => setAll(true)}>
          Show all ({Math.round(text.length / 1024).toLocaleString('en-US')} KB)
        </button>
      )}
    </div>
  );
}
