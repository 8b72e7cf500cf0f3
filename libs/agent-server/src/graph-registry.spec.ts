import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultAssistantId, loadGraphs, uuidv5 } from './graph-registry';

describe('graph registry', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'th-graph-registry-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('derives the default assistant id the published client expects (uuid5 of the graph name)', () => {
    expect(defaultAssistantId('agent')).toBe('fe096781-5601-53d2-b2f6-0d3403f7e9ca');
    // RFC 4122 appendix example: uuid5(DNS namespace, "www.example.com")
    expect(uuidv5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe('2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  it('loads a compiled graph and a factory, attaching the checkpointer', async () => {
    writeFileSync(
      join(dir, 'g.js'),
      // (resolution from outside the repository is covered by the process test; jest has its own resolver)
      `const { StateGraph, Annotation, START, END } = require(${JSON.stringify(require.resolve('@langchain/langgraph'))});
       const S = Annotation.Root({ n: Annotation() });
       const build = () => new StateGraph(S).addNode('a', (s) => ({ n: s.n + 1 })).addEdge(START, 'a').addEdge('a', END).compile();
       exports.graph = build();
       exports.make = build;`,
    );
    writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ graphs: { one: './g.js:graph', two: './g.js:make' } }));
    const saver = { marker: true };
    const graphs = await loadGraphs(join(dir, 'langgraph.json'), saver);
    expect([...graphs.keys()]).toEqual(['one', 'two']);
    expect(graphs.get('two')!.assistantId).toBe(defaultAssistantId('two'));
    expect(graphs.get('one')!.graph.checkpointer).toBe(saver);
  });

  it('refuses a configuration that is not JSON, has no graphs map, or names an export that is not a graph', async () => {
    writeFileSync(join(dir, 'bad.json'), '{');
    await expect(loadGraphs(join(dir, 'bad.json'), null)).rejects.toThrow(/cannot read the graph configuration/);
    writeFileSync(join(dir, 'empty.json'), JSON.stringify({ graph: {} }));
    await expect(loadGraphs(join(dir, 'empty.json'), null)).rejects.toThrow(/graphs/);
    writeFileSync(join(dir, 'x.js'), 'exports.notAGraph = 42;');
    writeFileSync(join(dir, 'wrong.json'), JSON.stringify({ graphs: { g: './x.js:notAGraph' } }));
    await expect(loadGraphs(join(dir, 'wrong.json'), null)).rejects.toThrow(/does not export a compiled graph/);
  });
});
