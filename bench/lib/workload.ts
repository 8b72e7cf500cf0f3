import { randomBytes } from 'node:crypto';
import { dottedSegment } from '@th/ingest';

export interface BenchRun {
  id: string;
  post: Record<string, unknown>;
  patch: Record<string, unknown>;
}

const PAD = 'lorem ipsum dolor sit amet '.repeat(40); // ~1 KB of text per run with the other fields


/** A UUIDv7 (48-bit ms timestamp first), as the SDK generates run ids. */
export function uuidv7(ms: number): string {
  const b = randomBytes(16);
  b.writeUIntBE(Math.floor(ms), 0, 6);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

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
