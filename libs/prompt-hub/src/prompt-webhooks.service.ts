import { randomBytes, randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { AuditPublisher } from '@th/audit-client';
import type { Identity, PromptWebhook, PromptWebhookCreate, PromptWebhookDelivery, PromptWebhookDeliveryListQuery, PromptWebhookPayload, PromptWebhookTrigger, PromptWebhookUpdate } from '@th/contracts';
import { OutboundRefused, ValidationFailed, conflict, notFound, type OutboundPolicy, type SecretCipher } from '@th/platform';
import type { EntityManager } from 'typeorm';
import type { PromptWebhookSender, WebhookTarget } from './prompt-webhook.delivery';
import { PromptWebhooksRepository, type WebhookRow, type WebhookWrite } from './prompt-webhooks.repository';
import { WebhookOutboxRepository } from './webhook-outbox.repository';

/** Told of every commit and tag change in the transaction that stores it, then again once that committed. */
export interface PromptEventListener {
  /** Stages what the event causes with `db`, the storing transaction: the change and its deliveries land together. */
  promptEvent(db: Pick<EntityManager, 'query'>, tenantId: string, payload: PromptWebhookPayload): Promise<void>;
  /** The transaction committed: send what it staged now rather than at the next poll. */
  committed(): void;
}

const MASK = '********';

export function webhookCovers(w: Pick<WebhookRow, 'include_prompts' | 'exclude_prompts' | 'triggers'>, prompt: string, event: PromptWebhookTrigger): boolean {
  if (!w.triggers.includes(event)) return false;
  if (w.exclude_prompts?.includes(prompt)) return false;
  return !w.include_prompts || w.include_prompts.length === 0 || w.include_prompts.includes(prompt);
}

/** Prompt webhooks of a workspace: every write audited; URLs under the outbound policy; secret and headers sealed. */
export class PromptWebhooksService implements PromptEventListener {
  constructor(
    private readonly repo: PromptWebhooksRepository,
    private readonly cipher: SecretCipher,
    private readonly outbound: OutboundPolicy,
    private readonly sender: PromptWebhookSender,
    private readonly audit: AuditPublisher,
    /** Pending deliveries a workspace may have before new events are not staged. */
    private readonly maxPendingPerTenant: number,
    /** Wakes the dispatcher. */
    private readonly wake: () => void,
  ) {}

  private readonly logger = new Logger('prompt-webhooks');

  async list(identity: Identity): Promise<PromptWebhook[]> {
    return (await this.repo.list(identity.tenant_id)).map((w) => this.present(w));
  }

  async get(identity: Identity, id: string): Promise<PromptWebhook> {
    const w = await this.repo.get(identity.tenant_id, id);
    if (!w) throw notFound('Prompt webhook');
    return this.present(w);
  }

  /** The delivery history of one of the workspace's webhooks (another workspace's is a 404). */
  async deliveries(identity: Identity, id: string, q: PromptWebhookDeliveryListQuery): Promise<{ deliveries: PromptWebhookDelivery[]; total: number }> {
    if (!(await this.repo.get(identity.tenant_id, id))) throw notFound('Prompt webhook');
    const { rows, total } = await new WebhookOutboxRepository(this.repo.db).listForWebhook(identity.tenant_id, id, q);
    return {
      deliveries: rows.map((d) => ({
        id: d.id,
        webhook_id: d.webhook_id,
        event: d.event as PromptWebhookTrigger,
        status: d.status,
        attempts: d.attempts,
        last_status_code: d.last_status_code,
        last_error: d.last_error,
        created_at: d.created_at.toISOString(),
        next_attempt_at: d.status === 'pending' ? d.next_attempt_at.toISOString() : null,
        finished_at: d.finished_at?.toISOString() ?? null,
      })),
      total,
    };
  }

  /** Tracked. The answer carries the signing secret, shown this once. */
  create(identity: Identity, body: PromptWebhookCreate): Promise<PromptWebhook & { secret: string }> {
    const id = body.id ?? randomUUID();
    return this.audit.track({ identity, resources: [{ type: 'prompt_webhook', id }] }, async () => {
      await this.checkUrl(body.url);
      const secret = `whsec_${randomBytes(32).toString('base64url')}`;
      const row = await this.repo.insert(identity.tenant_id, id, this.toWrite(body), this.cipher.sealText(secret));
      if (!row) throw conflict(`A prompt webhook with id ${id} exists`);
      return { ...this.present(row), secret };
    });
  }

  /** Tracked. Fields left out keep their values; `headers` replaces all headers. */
  update(identity: Identity, id: string, patch: PromptWebhookUpdate): Promise<PromptWebhook> {
    return this.audit.track({ identity, resources: [{ type: 'prompt_webhook', id }] }, async () => {
      const cur = await this.repo.get(identity.tenant_id, id);
      if (!cur) throw notFound('Prompt webhook');
      if (patch.url) await this.checkUrl(patch.url);
      const write: WebhookWrite = {
        url: patch.url ?? cur.url,
        include_prompts: patch.include_prompts !== undefined ? (patch.include_prompts ?? null) : cur.include_prompts,
        exclude_prompts: patch.exclude_prompts !== undefined ? (patch.exclude_prompts ?? null) : cur.exclude_prompts,
        headers_sealed: patch.headers !== undefined ? this.sealHeaders(patch.headers ?? null) : cur.headers_sealed,
        triggers: patch.triggers ?? cur.triggers,
      };
      const row = await this.repo.update(identity.tenant_id, id, write);
      if (!row) throw notFound('Prompt webhook');
      return this.present(row);
    });
  }

  /** Tracked. */
  delete(identity: Identity, id: string): Promise<void> {
    return this.audit.track({ identity, resources: [{ type: 'prompt_webhook', id }] }, async () => {
      if (!(await this.repo.delete(identity.tenant_id, id))) throw notFound('Prompt webhook');
    });
  }

  /** Tracked. One unsigned POST of `payload` to an unsaved webhook; answers how it went. */
  test(identity: Identity, webhook: { url: string; headers?: Record<string, string> | null }, payload: PromptWebhookPayload): Promise<Record<string, string>> {
    return this.audit.track({ identity, resources: [] }, async (): Promise<Record<string, string>> => {
      await this.checkUrl(webhook.url, ['body', 'webhook', 'url']);
      const r = await this.sender.attempt({ id: null, url: webhook.url, headers: webhook.headers ?? {}, secret: null }, payload.event, JSON.stringify(payload));
      return r.ok ? { status: 'delivered', status_code: String(r.status) } : { status: 'failed', status_code: r.status === null ? '' : String(r.status), error: r.error };
    });
  }

  /** Stages one delivery per webhook of the workspace that covers the event, in the caller's transaction. */
  async promptEvent(db: Pick<EntityManager, 'query'>, tenantId: string, payload: PromptWebhookPayload): Promise<void> {
    const covering = (await new PromptWebhooksRepository(db).list(tenantId)).filter((w) => webhookCovers(w, payload.prompt_name, payload.event));
    if (covering.length === 0) return;
    const outbox = new WebhookOutboxRepository(db);
    if ((await outbox.pending(tenantId)) + covering.length > this.maxPendingPerTenant) {
      this.logger.warn({ msg: 'prompt webhook event not staged: too many deliveries pending', tenant_id: tenantId, prompt_id: payload.prompt_id, event: payload.event });
      return;
    }
    const body = JSON.stringify(payload);
    await outbox.stage(covering.map((w) => ({ id: randomUUID(), tenant_id: tenantId, webhook_id: w.id, event: payload.event, body })));
  }

  committed(): void {
    this.wake();
  }

  /** Where a staged delivery goes now: the webhook's current URL, headers and secret. */
  async target(tenantId: string, webhookId: string): Promise<WebhookTarget | null> {
    const w = await this.repo.get(tenantId, webhookId);
    return w ? { id: w.id, url: w.url, headers: this.openHeaders(w.headers_sealed), secret: this.cipher.openText(w.secret_sealed) } : null;
  }

  private async checkUrl(url: string, loc: (string | number)[] = ['body', 'url']): Promise<void> {
    try {
      await this.outbound.check(url);
    } catch (err) {
      if (err instanceof OutboundRefused) throw new ValidationFailed([{ loc, msg: `url ${err.message}`, type: 'value_error' }]);
      throw err;
    }
  }

  private toWrite(b: PromptWebhookCreate): WebhookWrite {
    return { url: b.url, include_prompts: b.include_prompts ?? null, exclude_prompts: b.exclude_prompts ?? null, headers_sealed: this.sealHeaders(b.headers ?? null), triggers: b.triggers };
  }

  private sealHeaders(h: Record<string, string> | null): string | null {
    return h && Object.keys(h).length > 0 ? this.cipher.sealText(JSON.stringify(h)) : null;
  }

  private openHeaders(sealed: string | null): Record<string, string> {
    return sealed ? (JSON.parse(this.cipher.openText(sealed)) as Record<string, string>) : {};
  }

  /** Header values are secrets: only their names are shown. */
  private present(w: WebhookRow): PromptWebhook {
    const headers = w.headers_sealed ? Object.fromEntries(Object.keys(this.openHeaders(w.headers_sealed)).map((k) => [k, MASK])) : null;
    return {
      id: w.id,
      tenant_id: w.tenant_id,
      url: w.url,
      include_prompts: w.include_prompts,
      exclude_prompts: w.exclude_prompts,
      headers,
      triggers: w.triggers,
      created_at: w.created_at.toISOString(),
      updated_at: w.updated_at.toISOString(),
    };
  }
}
