import { createHmac } from 'node:crypto';
import * as http from 'node:http';
import * as https from 'node:https';
import { Logger } from '@nestjs/common';
import { OutboundRefused, type OutboundPolicy } from '@th/platform';
import type { ClaimedDelivery, WebhookOutboxRepository } from './webhook-outbox.repository';

export interface PromptWebhookDeliveryOptions {
  /** Bound on one POST (connect, send and answer). */
  timeoutMs: number;
  /** Tries per delivery (the first included). */
  attempts: number;
  /** Wait before the second try; doubled before each next one. */
  backoffMs: number;
  /** POSTs under way at most in this process. */
  concurrency: number;
  /** How often the outbox is looked at for due deliveries (a commit also wakes the dispatcher at once). */
  pollMs: number;
  /** Pending deliveries a workspace may have; past it new events are not staged (and logged). */
  maxPendingPerTenant: number;
  /** How long finished deliveries are kept. */
  retentionMs: number;
}

export const DEFAULT_DELIVERY_OPTIONS: PromptWebhookDeliveryOptions = {
  timeoutMs: 10_000,
  attempts: 4,
  backoffMs: 1_000,
  concurrency: 32,
  pollMs: 1_000,
  maxPendingPerTenant: 10_000,
  retentionMs: 7 * 24 * 3600_000,
};

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

/** One signed POST of a prompt event, through the outbound policy's agents (the address of each connection is checked). */
export class PromptWebhookSender {
  private readonly agents: { http: http.Agent; https: https.Agent };

  constructor(
    policy: OutboundPolicy,
    private readonly timeoutMs: number,
  ) {
    this.agents = policy.agents();
  }

  /** One signed POST; redirects are not followed. */
  attempt(target: WebhookTarget, event: string, body: string): Promise<AttemptResult> {
    return new Promise((resolve) => {
      const u = new URL(target.url);
      const headers: Record<string, string | number> = { ...target.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), [EVENT_HEADER]: event };
      if (target.secret) headers[SIGNATURE_HEADER] = signWebhookBody(target.secret, body, Math.floor(Date.now() / 1000));
      const send = u.protocol === 'https:' ? https.request : http.request;
      const req = send(u, { method: 'POST', agent: u.protocol === 'https:' ? this.agents.https : this.agents.http, headers, signal: AbortSignal.timeout(this.timeoutMs) }, (res) => {
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

/** The webhook a staged delivery goes to, as it is now (null when it was deleted since). */
export type TargetResolver = (tenantId: string, webhookId: string) => Promise<WebhookTarget | null>;

/**
 * Sends the deliveries staged in the outbox: claims due ones with a lease, POSTs them, and retries a network
 * error, a 429 or a 5xx with a doubling wait, kept in the database, so neither a restart nor a second process
 * loses or doubles a delivery (a process that dies mid-POST leaves it to be sent again: at least once).
 */
export class PromptWebhookDispatcher {
  private readonly logger = new Logger('prompt-webhooks');
  private readonly inflight = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private poll: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private again = false;
  private closing = false;
  private sweptAt = 0;

  constructor(
    private readonly outbox: WebhookOutboxRepository,
    private readonly sender: PromptWebhookSender,
    private readonly resolve: TargetResolver,
    private readonly opts: PromptWebhookDeliveryOptions,
  ) {}

  start(): void {
    if (this.poll || this.closing) return;
    this.poll = setInterval(() => this.kick(), this.opts.pollMs);
    this.poll.unref();
    this.kick();
  }

  /** Looks for due deliveries now (after a commit staged some, or when a retry falls due). */
  kick(): void {
    if (this.closing) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = this.tick()
      .catch((err: unknown) => this.logger.error({ msg: 'prompt webhook outbox not read', error: (err as Error).message }))
      .finally(() => {
        this.ticking = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Stops claiming and waits for the POSTs under way (each bounded by its timeout); what is left stays staged. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.poll) clearInterval(this.poll);
    for (const t of this.timers) clearTimeout(t);
    await this.ticking;
    await Promise.allSettled([...this.inflight]);
  }

  /** Resolves once nothing is under way in this process (tests). */
  async idle(): Promise<void> {
    while (this.ticking || this.inflight.size > 0) {
      await this.ticking;
      await Promise.allSettled([...this.inflight]);
    }
  }

  private async tick(): Promise<void> {
    if (Date.now() - this.sweptAt > 60_000) {
      this.sweptAt = Date.now();
      await this.outbox.sweep(this.opts.attempts, this.opts.retentionMs);
    }
    const free = this.opts.concurrency - this.inflight.size;
    if (free <= 0 || this.closing) return;
    // a claim outlives the POST it covers, so no other process takes the delivery while it is under way
    const claimed = await this.outbox.claim(free, this.opts.timeoutMs * 2 + 5_000, this.opts.attempts);
    for (const d of claimed) {
      const p = this.deliver(d)
        .catch((err: unknown) => this.logger.error({ msg: 'prompt webhook delivery not recorded', delivery_id: d.id, error: (err as Error).message }))
        .finally(() => this.inflight.delete(p));
      this.inflight.add(p);
    }
    if (claimed.length === free) this.again = true;
  }

  private async deliver(d: ClaimedDelivery): Promise<void> {
    const target = await this.resolve(d.tenant_id, d.webhook_id);
    if (!target) return this.outbox.finish(d.id, 'cancelled', null, 'the webhook was deleted');
    const r = await this.sender.attempt(target, d.event, d.body);
    if (r.ok) return this.outbox.finish(d.id, 'delivered', r.status, null);
    if (r.retry && d.attempts < this.opts.attempts) {
      const wait = this.opts.backoffMs * 2 ** (d.attempts - 1);
      await this.outbox.retryLater(d.id, wait, r.status, r.error);
      if (!this.closing) {
        const t = setTimeout(() => {
          this.timers.delete(t);
          this.kick();
        }, wait);
        t.unref();
        this.timers.add(t);
      }
      return;
    }
    // the URL may carry a token in its path or query: only its origin is logged
    const origin = URL.canParse(target.url) ? new URL(target.url).origin : '(invalid URL)';
    this.logger.warn({ msg: 'prompt webhook not delivered', webhook_id: d.webhook_id, target: origin, status: r.status, error: r.error });
    await this.outbox.finish(d.id, 'failed', r.status, r.error);
  }
}
