import { dottedSegment } from '@th/ingest';
import { uuidv7 } from '@th/testing';

export interface BenchRun {
  id: string;
  post: Record<string, unknown>;
  patch: Record<string, unknown>;
}

const PAD = 'lorem ipsum dolor sit amet '.repeat(40); // ~1 KB of text per run with the other fields


/** One root run of about 1 KB (post) and its completion (patch), as the SDK would send them. */
export function benchRun(project: string, i: number, base: number): BenchRun {
  const startMs = base + i;
  const id = uuidv7(startMs);
  const start = new Date(startMs).toISOString().replace('Z', '001Z');
  const order = dottedSegment(start, id);
  return {
    id,
    post: {
      id,
      name: 'bench-chain',
      run_type: i % 3 === 0 ? 'llm' : 'chain',
      start_time: start,
      trace_id: id,
      dotted_order: order,
      session_name: project,
      inputs: { prompt: PAD.slice(0, 700), i },
      extra: { metadata: { bench: true, shard: i % 16 } },
      tags: ['bench'],
    },
    patch: {
      id,
      trace_id: id,
      dotted_order: order,
      session_name: project,
      end_time: startMs + 250,
      outputs: { text: PAD.slice(0, 200), usage_metadata: { input_tokens: 100, output_tokens: 20, total_tokens: 120 } },
    },
  };
}
