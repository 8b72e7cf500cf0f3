import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tar from 'tar';

// The echo deployment the control-plane benchmarks deploy, and one call of it through its address.
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const GRAPH_JS = `'use strict';
const { StateGraph, MessagesAnnotation, START, END } = require('@langchain/langgraph');
module.exports.graph = new StateGraph(MessagesAnnotation)
  .addNode('echo', async (s) => ({ messages: [{ role: 'assistant', content: 'VERSION' }] }))
  .addEdge(START, 'echo').addEdge('echo', END).compile();
`;

export function writeProject(dir: string, version: string): void {
  writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ graphs: { echo: './graph.js:graph' } }));
  writeFileSync(join(dir, 'graph.js'), GRAPH_JS.replace('VERSION', version));
}

export async function tarball(version: string): Promise<Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'cp-bench-src-'));
  writeProject(dir, version);
  const chunks: Buffer[] = [];
  for await (const c of tar.c({ gzip: true, cwd: dir }, ['langgraph.json', 'graph.js'])) chunks.push(c as Buffer);
  rmSync(dir, { recursive: true, force: true });
  return Buffer.concat(chunks);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A thread and a runs/wait on it, with the deployment's key; the last message, or null on any failure. */
export async function ask(url: string, key: string): Promise<string | null> {
  const headers = { 'content-type': 'application/json', 'x-api-key': key };
  try {
    const t = (await (await fetch(`${url}/threads`, { method: 'POST', headers, body: '{}' })).json()) as Json;
    const r = await fetch(`${url}/threads/${t.thread_id}/runs/wait`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ assistant_id: 'echo', input: { messages: [{ role: 'user', content: 'x' }] } }),
    });
    if (r.status !== 200) return null;
    const out = (await r.json()) as Json;
    const msgs = (out.messages ?? out.values?.messages ?? []) as Json[];
    return (msgs.at(-1)?.content as string) ?? null;
  } catch {
    return null;
  }
}

