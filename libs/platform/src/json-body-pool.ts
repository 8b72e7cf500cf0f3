import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import type { JsonBodyJob, JsonBodyReply } from './json-body.worker';

export type JsonBodyResult =
  | { kind: 'ok'; body: Buffer; plan: Int32Array; storable: boolean }
  | { kind: 'too_deep'; position: number }
  | { kind: 'invalid'; message: string };

/** The pool's worker stopped (crashed, ran out of memory, was terminated) while it held the request's body. */
export class JsonWorkerLostError extends Error {}

export interface JsonBodyPoolOptions {
  /** Worker threads; default: one per CPU but one (the main thread's), at least one, at most four. */
  size?: number;
  resourceLimits?: ResourceLimits;
}

interface Job {
  message: JsonBodyJob;
  resolve(r: JsonBodyResult): void;
  reject(err: Error): void;
}

// Compiled (dist), the worker is a .js file beside this one; under the test runner (sources) it is loaded
// through the same compiler the tests use.
const WORKER_FILE = join(__dirname, `json-body.worker${__filename.endsWith('.ts') ? '.ts' : '.js'}`);
const TS_BOOTSTRAP = `
const { workerData } = require('node:worker_threads');
const Module = require('node:module');
const { readFileSync } = require('node:fs');
const { transformSync } = require(require.resolve('@swc/core', { paths: [workerData.dir] }));
Module._extensions['.ts'] = (m, filename) => m._compile(transformSync(readFileSync(filename, 'utf8'), { filename, jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }).code, filename);
require(workerData.file);
`;

/**
 * A small, bounded pool of worker threads that check and cut large JSON bodies (json-body.worker.ts), so
 * that their JSON.parse never runs on the event loop that serves every other request. Jobs wait in order
 * when every worker is busy. Workers are started on first use, and again after one is lost.
 */
export class JsonBodyPool {
  private readonly size: number;
  private readonly idle: Worker[] = [];
  private readonly busy = new Map<Worker, Job>();
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly opts: JsonBodyPoolOptions = {}) {
    this.size = Math.max(1, opts.size ?? Math.min(4, availableParallelism() - 1));
  }

  /**
   * Checks `body` (depth, then JSON.parse) and returns its plan with the body; the body's memory is moved
   * to the worker and back, so the caller must not use `body` afterwards, only what is returned.
   */
  run(body: Buffer, maxDepth: number): Promise<JsonBodyResult> {
    if (this.closed) return Promise.reject(new JsonWorkerLostError('the JSON body pool is closed'));
    // Only a buffer that owns its memory may be moved (a small Buffer shares Node's pool slab with others).
    let own = body;
    if (body.byteOffset !== 0 || body.byteLength !== body.buffer.byteLength) {
      own = Buffer.allocUnsafeSlow(body.length);
      body.copy(own);
    }
    return new Promise<JsonBodyResult>((resolve, reject) => {
      this.queue.push({ message: { id: this.nextId++, bytes: own.buffer as ArrayBuffer, length: own.length, maxDepth }, resolve, reject });
      this.dispatch();
    });
  }

  /** Stops the workers; waiting and running jobs fail with JsonWorkerLostError. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new JsonWorkerLostError('the JSON body pool is closed'));
    const workers = [...this.idle.splice(0), ...this.busy.keys()];
    await Promise.all(workers.map((w) => w.terminate()));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const worker = this.idle.pop() ?? (this.busy.size < this.size ? this.spawn() : undefined);
      if (!worker) return;
      const job = this.queue.shift()!;
      this.busy.set(worker, job);
      worker.postMessage(job.message, [job.message.bytes]);
    }
  }

  private spawn(): Worker {
    const worker = WORKER_FILE.endsWith('.ts')
      ? new Worker(TS_BOOTSTRAP, { eval: true, workerData: { file: WORKER_FILE, dir: __dirname }, resourceLimits: this.opts.resourceLimits })
      : new Worker(WORKER_FILE, { resourceLimits: this.opts.resourceLimits });
    // Idle workers do not keep the process alive.
    worker.unref();
    worker.on('message', (reply: JsonBodyReply) => {
      const job = this.busy.get(worker);
      this.busy.delete(worker);
      this.idle.push(worker);
      if (job) job.resolve(reply.kind === 'ok' ? { kind: 'ok', body: Buffer.from(reply.bytes, 0, job.message.length), plan: reply.plan, storable: reply.storable } : reply);
      this.dispatch();
    });
    const lost = (err: Error) => {
      const job = this.busy.get(worker);
      this.busy.delete(worker);
      const at = this.idle.indexOf(worker);
      if (at >= 0) this.idle.splice(at, 1);
      job?.reject(new JsonWorkerLostError(`the JSON body worker stopped: ${err.message}`, { cause: err }));
      if (!this.closed) this.dispatch();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`exit code ${code}`)));
    return worker;
  }
}

