import type { Response } from 'express';
import type { RunRow } from './agent.repository';
import { AgentService, type ThreadStreamCursor } from './agent.service';

export interface StreamOptions {
  threadId: string | null;
  run: RunRow;
  /** Resume after this event id (the Last-Event-ID header). */
  lastEventId: string | undefined;
  /** Cancel the run when the client goes away before it ends. */
  cancelOnDisconnect: boolean;
  /** Headers of a freshly created run (Content-Location, Location); none when re-joining. */
  created: boolean;
  /** Drop the run's temporary thread after the stream ends (stateless runs). */
  dropAfter: boolean;
}

const runPath = (threadId: string | null, runId: string) => (threadId ? `/threads/${threadId}/runs/${runId}` : `/runs/${runId}`);

/**
 * Opens a Server-Sent-Events response; the returned signal aborts when the client goes away before
 * the response has ended, and `done` stops listening for that.
 */
function openEventStream(res: Response, headers: Record<string, string>): { signal: AbortSignal; done(): void } {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.flushHeaders();
  const abort = new AbortController();
  const onClose = () => {
    if (!res.writableEnded) abort.abort();
  };
  res.on('close', onClose);
  return { signal: abort.signal, done: () => res.off('close', onClose) };
}

/**
 * Streams a run's events as Server-Sent Events: `metadata` first, then each event with its sequence
 * number as `id`, so a client reconnecting with Last-Event-ID gets exactly what it missed.
 */
export async function streamRun(service: AgentService, res: Response, o: StreamOptions): Promise<void> {
  const path = runPath(o.threadId, o.run.run_id);
  const { signal, done } = openEventStream(res, { ...(o.created ? { 'Content-Location': path } : {}), Location: `${path}/stream` });
  const after = Number.parseInt(o.lastEventId ?? '', 10);
  if (!Number.isFinite(after)) res.write(`event: metadata\ndata: ${JSON.stringify({ run_id: o.run.run_id, attempt: o.run.attempt || 1 })}\n\n`);
  try {
    for await (const e of service.runs.events(o.threadId, o.run.run_id, Number.isFinite(after) ? after : 0, signal)) {
      if (signal.aborted) break;
      res.write(`event: ${e.event}\ndata: ${e.data}\nid: ${e.seq}\n\n`);
    }
    if (!signal.aborted && (o.run.kwargs as { record_events?: boolean }).record_events === false && !Number.isFinite(after)) {
      // a run nobody asked to stream kept no events: its stream is its end state
      const ended = await service.runs.waitForEnd(null, o.run.run_id, signal);
      if (ended && !signal.aborted) {
        const e = AgentService.endEvent(ended);
        res.write(`event: ${e.event}\ndata: ${e.data}\n\n`);
      }
    }
  } finally {
    done();
    if (signal.aborted && o.cancelOnDisconnect) await service.runs.cancelQuietly(o.run.thread_id, o.run.run_id);
    if (o.dropAfter) {
      const ended = await service.runs.waitForEnd(null, o.run.run_id);
      if (ended) await service.runs.dropTemporaryThread(ended);
    }
    if (!signal.aborted) res.end();
  }
}

/**
 * Streams a thread's run events as Server-Sent Events, run after run (each run's `metadata` first), ids
 * "<run_id>:<seq>", until the client goes away; Location lets the published client reconnect with
 * Last-Event-ID. Ends by itself only when the thread is deleted.
 */
export async function streamThread(service: AgentService, res: Response, o: { threadId: string; after: ThreadStreamCursor | null }): Promise<void> {
  const { signal, done } = openEventStream(res, { Location: `/threads/${o.threadId}/stream` });
  try {
    for await (const e of service.runs.threadEvents(o.threadId, o.after, signal)) {
      if (signal.aborted) break;
      res.write(`event: ${e.event}\ndata: ${e.data}\nid: ${e.id}\n\n`);
    }
  } finally {
    done();
    if (!signal.aborted) res.end();
  }
}

/** Answers a wait request when the run ends; the client leaving first cancels the run unless asked not to. */
export async function waitRun(service: AgentService, res: Response, o: { threadId: string | null; run: RunRow; cancelOnDisconnect: boolean; dropAfter: boolean }): Promise<void> {
  res.setHeader('Content-Location', runPath(o.threadId, o.run.run_id));
  const abort = new AbortController();
  const onClose = () => {
    if (!res.writableEnded) abort.abort();
  };
  res.on('close', onClose);
  try {
    const ended = await service.runs.waitForEnd(null, o.run.run_id, abort.signal);
    if (abort.signal.aborted) {
      if (o.cancelOnDisconnect) await service.runs.cancelQuietly(o.run.thread_id, o.run.run_id);
      if (o.dropAfter) {
        const last = await service.runs.waitForEnd(null, o.run.run_id);
        if (last) await service.runs.dropTemporaryThread(last);
      }
    } else {
      if (o.dropAfter && ended) await service.runs.dropTemporaryThread(ended);
      res.status(200).json(AgentService.finalBody(ended));
    }
  } finally {
    res.off('close', onClose);
  }
}
