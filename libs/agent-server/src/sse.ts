import type { Response } from 'express';
import type { RunRow } from './agent.repository';
import { AgentService } from './agent.service';

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
 * Streams a run's events as Server-Sent Events: `metadata` first, then each event with its sequence
 * number as `id`, so a client reconnecting with Last-Event-ID gets exactly what it missed.
 */
export async function streamRun(service: AgentService, res: Response, o: StreamOptions): Promise<void> {
  const path = runPath(o.threadId, o.run.run_id);
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  if (o.created) res.setHeader('Content-Location', path);
  res.setHeader('Location', `${path}/stream`);
  res.flushHeaders();
  const abort = new AbortController();
  const onClose = () => {
    if (!res.writableEnded) abort.abort();
  };
  res.on('close', onClose);
  const after = Number.parseInt(o.lastEventId ?? '', 10);
  if (!Number.isFinite(after)) res.write(`event: metadata\ndata: ${JSON.stringify({ run_id: o.run.run_id, attempt: o.run.attempt || 1 })}\n\n`);
  try {
    for await (const e of service.events(o.threadId, o.run.run_id, Number.isFinite(after) ? after : 0, abort.signal)) {
      if (abort.signal.aborted) break;
      res.write(`event: ${e.event}\ndata: ${e.data}\nid: ${e.seq}\n\n`);
    }
    if (!abort.signal.aborted && (o.run.kwargs as { record_events?: boolean }).record_events === false && !Number.isFinite(after)) {
      // a run nobody asked to stream kept no events: its stream is its end state
      const ended = await service.waitForEnd(null, o.run.run_id, abort.signal);
      if (ended && !abort.signal.aborted) {
        const body = AgentService.finalBody(ended) as { __error__?: unknown };
        res.write(body.__error__ ? `event: error\ndata: ${JSON.stringify(body.__error__)}\n\n` : `event: values\ndata: ${JSON.stringify(body)}\n\n`);
      }
    }
  } finally {
    res.off('close', onClose);
    if (abort.signal.aborted && o.cancelOnDisconnect) await service.cancelQuietly(o.run.thread_id, o.run.run_id);
    if (o.dropAfter) {
      const ended = await service.waitForEnd(null, o.run.run_id);
      if (ended) await service.dropTemporaryThread(ended);
    }
    if (!abort.signal.aborted) res.end();
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
    const ended = await service.waitForEnd(null, o.run.run_id, abort.signal);
    if (abort.signal.aborted) {
      if (o.cancelOnDisconnect) await service.cancelQuietly(o.run.thread_id, o.run.run_id);
      if (o.dropAfter) {
        const last = await service.waitForEnd(null, o.run.run_id);
        if (last) await service.dropTemporaryThread(last);
      }
    } else {
      if (o.dropAfter && ended) await service.dropTemporaryThread(ended);
      res.status(200).json(AgentService.finalBody(ended));
    }
  } finally {
    res.off('close', onClose);
  }
}
