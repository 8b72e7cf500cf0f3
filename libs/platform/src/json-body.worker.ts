import { parentPort } from 'node:worker_threads';
import { jsonDepthExceeded } from './json-depth';
import { jsonPlan } from './json-plan';

/** A body to check and cut (see JsonBodyPool): the bytes are transferred, not copied. */
export interface JsonBodyJob {
  id: number;
  bytes: ArrayBuffer;
  length: number;
  maxDepth: number;
}

/** The job's answer; `bytes` (the same buffer) comes back with the plan. */
export type JsonBodyReply =
  | { id: number; kind: 'ok'; bytes: ArrayBuffer; plan: Int32Array; storable: boolean }
  | { id: number; kind: 'too_deep'; position: number }
  | { id: number; kind: 'invalid'; message: string };

const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f])/i;

/** The same checks, in the same order, as a small body gets on the main thread: depth, then JSON.parse. */
function handle(job: JsonBodyJob): { reply: JsonBodyReply; transfer: ArrayBuffer[] } {
  const body = Buffer.from(job.bytes, 0, job.length);
  const text = body.toString('utf8');
  const deepAt = jsonDepthExceeded(text, job.maxDepth);
  if (deepAt >= 0) return { reply: { id: job.id, kind: 'too_deep', position: deepAt }, transfer: [] };
  try {
    JSON.parse(text);
  } catch (err) {
    return { reply: { id: job.id, kind: 'invalid', message: (err as Error).message }, transfer: [] };
  }
  const plan = jsonPlan(body, job.maxDepth);
  // No NUL and no surrogate can be in a string unless escaped (JSON refuses raw control characters, and
  // UTF-8 has no surrogates): without such an escape the main thread need not walk the value for them.
  const storable = !UNSTORABLE_ESCAPE.test(text);
  return { reply: { id: job.id, kind: 'ok', bytes: job.bytes, plan, storable }, transfer: [job.bytes, plan.buffer as ArrayBuffer] };
}

parentPort?.on('message', (job: JsonBodyJob) => {
  const { reply, transfer } = handle(job);
  parentPort!.postMessage(reply, transfer);
});
