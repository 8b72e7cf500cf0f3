import { randomBytes, randomUUID } from 'node:crypto';
import type { AuditPublisher } from '@th/audit-client';
import type { Identity, PromptWebhook, PromptWebhookCreate, PromptWebhookPayload, PromptWebhookTrigger, PromptWebhookUpdate } from '@th/contracts';
import { OutboundRefused, ValidationFailed, conflict, notFound, type OutboundPolicy, type SecretCipher } from '@th/platform';
import type { PromptWebhookDelivery } from './prompt-webhook.delivery';
import type { PromptWebhooksRepository, WebhookRow, WebhookWrite } from './prompt-webhooks.repository';

/** Told of every commit and tag change once it is stored. */
export interface PromptEventListener {
  promptEvent(tenantId: string, payload: PromptWebhookPayload): Promise<void>;
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
    private readonly delivery: PromptWebhookDelivery,
    private readonly audit: AuditPublisher,
  ) {}

  async list(identity: Identity): Promise<PromptWebhook[]> {
    return (await this.repo.list(identity.tenant_id)).map((w) => this.present(w));
  }

  async get(identity: Identity, id: string): Promise<PromptWebhook> {
    const w = await this.repo.get(identity.tenant_id, id);
    if (!w) throw notFound('Prompt webhook');
    return this.present(w);
  }

  /** Tracked: create_prompt_webhook. The answer carries the signing secret, shown this once. */
  create(identity: Identity, body: PromptWebhookCreate): Promise<PromptWebhook & { secret: string }> {
    const id = body.id ?? randomUUID();
    return this.audit.track({ operation: 'create_prompt_webhook', identity, resources: [{ type: 'prompt_webhook', id }] }, async () => {
      await this.checkUrl(body.url);
      const secret = `whsec_${randomBytes(32).toString('base64url')}`;
      const row = await this.repo.insert(identity.tenant_id, id, this.toWrite(body), this.cipher.sealText(secret));
      if (!row) throw conflict(`A prompt webhook with id ${id} exists`);
      return { ...this.present(row), secret };
    });
  }

  /** Tracked: update_prompt_webhook. Fields left out keep their values; `headers` replaces all headers. */
  update(identity: Identity, id: string, patch: PromptWebhookUpdate): Promise<PromptWebhook> {
    return this.audit.track({ operation: 'update_prompt_webhook', identity, resources: [{ type: 'prompt_webhook', id }] }, async () => {
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

  /** Tracked: delete_prompt_webhook. */
  delete(identity: Identity, id: string): Promise<void> {
    return this.audit.track({ operation: 'delete_prompt_webhook', identity, resources: [{ type: 'prompt_webhook', id }] }, async () => {
      if (!(await this.repo.delete(identity.tenant_id, id))) throw notFound('Prompt webhook');
    });
  }

  /** Tracked: test_prompt_webhook. One unsigned POST of `payload` to an unsaved webhook; answers how it went. */
  test(identity: Identity, webhook: { url: string; headers?: Record<string, string> | null }, payload: PromptWebhookPayload): Promise<Record<string, string>> {
    return this.audit.track({ operation: 'test_prompt_webhook', identity, resources: [] }, async (): Promise<Record<string, string>> => {
      await this.checkUrl(webhook.url, ['body', 'webhook', 'url']);
      const r = await this.delivery.attempt({ id: null, url: webhook.url, headers: webhook.headers ?? {}, secret: null }, payload.event, JSON.stringify(payload));
      return r.ok ? { status: 'delivered', status_code: String(r.status) } : { status: 'failed', status_code: r.status === null ? '' : String(r.status), error: r.error };
    });
  }

  /** Fans an event out to the workspace's webhooks that cover it; delivery runs after this returns. */
  async promptEvent(tenantId: string, payload: PromptWebhookPayload): Promise<void> {
    const body = JSON.stringify(payload);
    for (const w of await this.repo.list(tenantId)) {
      if (!webhookCovers(w, payload.prompt_name, payload.event)) continue;
      this.delivery.enqueue({ id: w.id, url: w.url, headers: this.openHeaders(w.headers_sealed), secret: this.cipher.openText(w.secret_sealed) }, payload.event, body);
    }
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
