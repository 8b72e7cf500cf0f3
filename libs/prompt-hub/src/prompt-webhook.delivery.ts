import { createHmac } from 'node:crypto';
import * as http from 'node:http';
import * as https from 'node:https';
import { Logger } from '@nestjs/common';
import { OutboundRefused, type OutboundPolicy } from '@th/platform';

export interface PromptWebhookDeliveryOptions {
  /** Bound on one POST (connect, send and answer). */
  timeoutMs: number;
  /** Tries per delivery (the first included). */
  attempts: number;
  /** Wait before the second try; doubled before each next one. */
  backoffMs: number;
  /** Deliveries under way at most; past it a new one is dropped (and logged) rather than queued without bound. */
  maxInflight: number;
}

export const DEFAULT_DELIVERY_OPTIONS: PromptWebhookDeliveryOptions = { timeoutMs: 10_000, attempts: 4, backoffMs: 1_000, maxInflight: 1_000 };

export const SIGNATURE_HEADER = 'x-tracehouse-signature';
export const EVENT_HEADER = 'x-tracehouse-event';

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: the receiver recomputes it with the webhook's secret and checks t is recent. */
export function signWebhookBody(secret: string, body: string, unixSeconds: number): string {
  return `t=${unixSeconds},v1=${createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')}`;
}

export interface WebhookTarget {
  id: string | null;
  url: string;
  headers: Record<string, string>;
  /** Null for POST /prompt-webhooks/test, whose ad-hoc webhook has no secret: sent unsigned. */
  secret: string | null;
}

export type AttemptResult = { ok: true; status: number } | { ok: false; status: number | null; error: string; retry: boolean };

/**
 * Posts prompt events to webhooks through the outbound policy's agents (the address each connection uses is
 * checked, not only the URL when it was saved). Deliveries run in this process, after the commit is stored:
 * retried with exponential backoff on a network error, a 429 or a 5xx, and never block or fail the commit.
 */
export class PromptWebhookDelivery {
  private readonly logger = new Logger('prompt-webhooks');
  private readonly inflight = new Set<Promise<void>>();
  private readonly agents: { http: http.Agent; https: https.Agent };
  private closing = false;

  constructor(
    policy: OutboundPolicy,
    private readonly opts: PromptWebhookDeliveryOptions = DEFAULT_DELIVERY_OPTIONS,
  ) {
    this.agents = policy.agents();
  }

  enqueue(target: WebhookTarget, event: string, body: string): void {
    if (this.closing) return;
    if (this.inflight.size >= this.opts.maxInflight) {
      this.logger.warn({ msg: 'prompt webhook dropped: too many deliveries under way', webhook_id: target.id, inflight: this.inflight.size });
      return;
    }
    const p = this.deliver(target, event, body).finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  /** Waits for the deliveries under way (each bounded by its tries and timeouts); called on shutdown. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.allSettled([...this.inflight]);
  }

  private async deliver(target: WebhookTarget, event: string, body: string): Promise<void> {
    // the URL may carry a token in its path or query: only its origin is logged
    const origin = URL.canParse(target.url) ? new URL(target.url).origin : '(invalid URL)';
    let last: AttemptResult | null = null;
    for (let attempt = 1; attempt <= this.opts.attempts; attempt++) {
      if (attempt > 1) await new Promise((r) => setTimeout(r, this.opts.backoffMs * 2 ** (attempt - 2)));
      last = await this.attempt(target, event, body);
      if (last.ok || !last.retry) break;
    }
    if (last && !last.ok) this.logger.warn({ msg: 'prompt webhook not delivered', webhook_id: target.id, target: origin, status: last.status, error: last.error });
  }

  /** One signed POST; redirects are not followed. */
  attempt(target: WebhookTarget, event: string, body: string): Promise<AttemptResult> {
    return new Promise((resolve) => {
      const u = new URL(target.url);
      const headers: Record<string, string | number> = { ...target.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), [EVENT_HEADER]: event };
      if (target.secret) headers[SIGNATURE_HEADER] = signWebhookBody(target.secret, body, Math.floor(Date.now() / 1000));
      const send = u.protocol === 'https:' ? https.request : http.request;
      const req = send(u, { method: 'POST', agent: u.protocol === 'https:' ? this.agents.https : this.agents.http, headers, signal: AbortSignal.timeout(this.opts.timeoutMs) }, (res) => {
        res.resume();
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve({ ok: true, status });
          else resolve({ ok: false, status, error: `HTTP ${status}`, retry: status === 429 || status >= 500 });
        });
        res.on('error', (err) => resolve({ ok: false, status: null, error: err.message, retry: true }));
      });
      // the policy answers the same on every try
      req.on('error', (err) => resolve({ ok: false, status: null, error: err.message, retry: !(err instanceof OutboundRefused) }));
      req.end(body);
    });
  }
}
