import { Logger } from '@nestjs/common';
import * as http from 'node:http';
import * as https from 'node:https';
import { ProxyAgent, request as undiciRequest } from 'undici';
import { OutboundRefused, type OutboundPolicy } from '@th/platform';
import { toRun, type RunRow } from './agent.repository';

/** Told of every run that reached a terminal status, once its end is committed. */
export interface RunEndListener {
  runEnded(run: RunRow): void;
}

export interface RunWebhookOptions {
  /** Bound on one POST (connect, send and answer). */
  timeoutMs: number;
  /** Wait before the one retry after a network error or a 5xx. */
  retryDelayMs: number;
}

/** The body LangGraph Platform posts: the run as GET /threads/{id}/runs/{run_id} returns it, its final values, and its error if it failed. */
export function webhookBody(run: RunRow): Record<string, unknown> {
  const failed = run.status === 'error' || run.status === 'timeout';
  return { ...toRun(run), values: run.result ?? {}, ...(failed ? { error: run.error ?? { error: 'Error', message: `run ended as ${run.status}` } } : {}) };
}

/**
 * Posts a run's end to the webhook it was created with. Fire and forget: a delivery never delays or fails
 * the run; it is retried once on a network error or 5xx, and a failure is only logged.
 */
export class RunWebhooks implements RunEndListener {
  private readonly logger = new Logger('agent-webhooks');
  private readonly inflight = new Set<Promise<void>>();
  private readonly agents: { http: http.Agent; https: https.Agent };

  private readonly proxy: ProxyAgent | null;

  constructor(
    /** Checked again on the address each delivery connects to: the name may resolve elsewhere since the run was created. */
    policy: OutboundPolicy,
    private readonly opts: RunWebhookOptions = { timeoutMs: 10_000, retryDelayMs: 500 },
    /** An HTTP proxy that applies the policy itself (the sandbox's): every delivery is tunnelled through it. */
    proxyUrl?: string,
  ) {
    this.agents = policy.agents();
    this.proxy = proxyUrl ? new ProxyAgent({ uri: proxyUrl, proxyTls: { timeout: opts.timeoutMs }, connectTimeout: opts.timeoutMs }) : null;
  }

  runEnded(run: RunRow): void {
    const url = (run.kwargs as { webhook?: unknown }).webhook;
    if (typeof url !== 'string' || url === '') return;
    const p = this.deliver(url, JSON.stringify(webhookBody(run)), run.run_id).finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  /** Waits for the deliveries under way (each is bounded by its timeouts); called on shutdown. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.inflight]);
    await this.proxy?.close();
  }

  private async deliver(url: string, body: string, runId: string): Promise<void> {
    // the URL may carry a token in its path or query: only its origin is logged
    const target = URL.canParse(url) ? new URL(url).origin : '(invalid URL)';
    let failure = '';
    for (let attempt = 1; attempt <= 2; attempt++) {
      try {
        const status = await this.post(url, body);
        if (status < 500) {
          if (status >= 300) this.logger.warn({ msg: 'webhook refused', run_id: runId, target, status });
          return;
        }
        failure = `HTTP ${status}`;
      } catch (err) {
        failure = (err as Error).message;
        if (err instanceof OutboundRefused) break; // the policy answers the same the second time
      }
      if (attempt === 1) await new Promise((r) => setTimeout(r, this.opts.retryDelayMs));
    }
    this.logger.warn({ msg: 'webhook not delivered', run_id: runId, target, error: failure });
  }

  /** One POST through the proxy, or the policy's agents (fetch has no per-connection hook); redirects are not followed. */
  private async post(url: string, body: string): Promise<number> {
    if (this.proxy) {
      const res = await undiciRequest(url, {
        method: 'POST', dispatcher: this.proxy, headers: { 'content-type': 'application/json' }, body, maxRedirections: 0, signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
      await res.body.dump();
      return res.statusCode;
    }
    return new Promise((resolve, reject) => {
      const u = new URL(url);
      const send = u.protocol === 'https:' ? https.request : http.request;
      const req = send(u, { method: 'POST', agent: u.protocol === 'https:' ? this.agents.https : this.agents.http, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }, signal: AbortSignal.timeout(this.opts.timeoutMs) }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }
}
