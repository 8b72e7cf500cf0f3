// CodeMirror for the filter: loaded only when the runs view opens (a dynamic import keeps it out of the initial bundle).
import { autocompletion, closeBrackets, completionStatus, type CompletionContext, type CompletionResult } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { linter, lintGutter, setDiagnostics, type Diagnostic } from '@codemirror/lint';
import { EditorState, Prec } from '@codemirror/state';
import { EditorView, keymap, placeholder } from '@codemirror/view';
import { COMPARATORS, FIELDS, LOGICAL, slotAt, valuesFor, type KnownValues } from './filter-language';

export interface FilterEditorHandle {
  setText(text: string): void;
  showError(error: { position: number; message: string } | null): void;
  destroy(): void;
}

const quote = (v: string) => (v === 'true' || v === 'false' ? v : JSON.stringify(v));

/** The editor's look, as a theme: its styles go into the shadow root's adopted sheet, which the pages' CSP allows. */
const THEME = EditorView.theme({
  '&': { minHeight: '32px', background: 'var(--bg)', color: 'var(--fg)', fontFamily: "ui-monospace, 'SFMono-Regular', Menlo, Consolas, monospace", fontSize: '13px' },
  '&.cm-focused': { outline: '2px solid var(--accent)' },
  '.cm-content': { padding: '6px 4px', caretColor: 'var(--fg)' },
  '.cm-placeholder': { color: 'var(--muted)' },
  '.cm-tooltip': { background: 'var(--bg)', color: 'var(--fg)', border: '1px solid var(--line)' },
  '.cm-tooltip-autocomplete ul li[aria-selected]': { background: 'var(--sel)', color: 'var(--fg)' },
  '.cm-completionDetail': { color: 'var(--muted)', marginLeft: '8px' },
  '.cm-lintRange-error': { textDecoration: 'underline wavy var(--err)' },
});

export function createFilterEditor(opts: {
  /** A shadow root: CodeMirror's styles are then an adopted style sheet, not a <style> element the CSP would refuse. */
  root: ShadowRoot;
  parent: HTMLElement;
  text: string;
  label: string;
  known: () => KnownValues;
  onSubmit: (text: string) => void;
  onChange: (text: string) => void;
}): FilterEditorHandle {
  const complete = (ctx: CompletionContext): CompletionResult | null => {
    const word = ctx.matchBefore(/[\w.]*/);
    if (!word || (word.from === word.to && !ctx.explicit && !/[(,\s]$/.test(ctx.state.sliceDoc(0, ctx.pos)))) return null;
    const slot = slotAt(ctx.state.sliceDoc(0, word.from));
    if (slot.kind === 'operator') {
      return {
        from: word.from,
        options: [
          ...Object.entries(COMPARATORS).map(([label, detail]) => ({ label, detail, type: 'function', apply: `${label}(` })),
          ...Object.entries(LOGICAL).map(([label, detail]) => ({ label, detail, type: 'keyword', apply: `${label}(` })),
        ],
        validFor: /^\w*$/,
      };
    }
    if (slot.kind === 'field') {
      return { from: word.from, options: Object.entries(FIELDS).map(([label, detail]) => ({ label, detail, type: 'property', apply: `${label}, ` })), validFor: /^\w*$/ };
    }
    if (slot.kind === 'value') {
      const values = valuesFor(slot.field, opts.known());
      if (values.length === 0) return null;
      return { from: word.from, options: values.map((v) => ({ label: v, type: 'constant', apply: quote(v) })) };
    }
    return null;
  };
  const view = new EditorView({
    root: opts.root,
    parent: opts.parent,
    state: EditorState.create({
      doc: opts.text,
      extensions: [
        history(),
        closeBrackets(),
        autocompletion({ override: [complete], activateOnTyping: true }),
        lintGutter(),
        linter(null),
        placeholder('and(eq(run_type, "llm"), gt(latency, 1))'),
        // Enter applies the filter, unless it is accepting a completion.
        Prec.high(keymap.of([{ key: 'Enter', run: (v) => completionStatus(v.state) !== 'active' && (opts.onSubmit(v.state.doc.toString()), true) }])),
        keymap.of([...defaultKeymap, ...historyKeymap]),
        EditorView.lineWrapping,
        THEME,
        EditorView.contentAttributes.of({ 'aria-label': opts.label, 'aria-multiline': 'false', role: 'textbox', 'data-testid': 'filter-editor' }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) {
            opts.onChange(u.state.doc.toString());
            view.dispatch(setDiagnostics(u.state, []));
          }
        }),
      ],
    }),
  });
  return {
    setText(text) {
      if (text !== view.state.doc.toString()) view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    showError(error) {
      const len = view.state.doc.length;
      const diagnostics: Diagnostic[] = error
        ? [{ from: Math.min(error.position, Math.max(0, len - 1)), to: Math.min(len, error.position + 1), severity: 'error', message: error.message }]
        : [];
      view.dispatch(setDiagnostics(view.state, diagnostics));
    },
    destroy() {
      view.destroy();
    },
  };
}
