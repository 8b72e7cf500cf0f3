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
  | { id: number; kind: 'ok'; bytes: ArrayBuffer; plan: Int32Array }
  | { id: number; kind: 'too_deep'; position: number }
  | { id: number; kind: 'invalid'; message: string };

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
  return { reply: { id: job.id, kind: 'ok', bytes: job.bytes, plan }, transfer: [job.bytes, plan.buffer as ArrayBuffer] };
}

parentPort?.on('message', (job: JsonBodyJob) => {
  const { reply, transfer } = handle(job);
  parentPort!.postMessage(reply, transfer);
});
