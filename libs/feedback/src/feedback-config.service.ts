import { Injectable } from '@nestjs/common';
import { feedbackConfigProblems, type FeedbackConfig, type FeedbackConfigCreate, type FeedbackConfigRecord, type FeedbackConfigUpdate, type Identity } from '@th/contracts';
import { ValidationFailed, conflict, notFound } from '@th/platform';
import { FeedbackConfigRepository, type FeedbackConfigPage } from './feedback-config.repository';

const sameConfig = (a: FeedbackConfig, b: FeedbackConfig): boolean =>
  a.type === b.type && (a.min ?? null) === (b.min ?? null) && (a.max ?? null) === (b.max ?? null) && JSON.stringify(a.categories ?? null) === JSON.stringify(b.categories ?? null);

/**
 * The workspace's feedback configs, one per feedback key. Writes of one (workspace, key) are
 * serialized in this process, so a read-check-write never interleaves with another.
 */
@Injectable()
export class FeedbackConfigService {
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(private readonly repo: FeedbackConfigRepository) {}

  list(identity: Identity, keys?: string[], page?: FeedbackConfigPage): Promise<FeedbackConfigRecord[]> {
    return this.repo.list(identity.tenant_id, keys, page);
  }

  /** The stored config of a key, or null. */
  forKey(tenantId: string, key: string): Promise<FeedbackConfigRecord | null> {
    return this.repo.get(tenantId, key);
  }

  /**
   * Creates the key's config; a create with the same feedback_config returns the stored one unchanged (whatever its
   * is_lower_score_better: the Python SDK sends false by default), a different feedback_config is 409 (PATCH changes it).
   */
  create(identity: Identity, body: FeedbackConfigCreate): Promise<FeedbackConfigRecord> {
    return this.serialized(identity.tenant_id, body.feedback_key, async () => {
      const existing = await this.repo.get(identity.tenant_id, body.feedback_key);
      const lower = body.is_lower_score_better ?? null;
      if (existing) {
        if (sameConfig(existing.feedback_config, body.feedback_config)) return existing;
        throw conflict(`A feedback config for key ${JSON.stringify(body.feedback_key)} already exists; PATCH /feedback-configs changes it`);
      }
      const rec: FeedbackConfigRecord = {
        feedback_key: body.feedback_key,
        feedback_config: body.feedback_config,
        tenant_id: identity.tenant_id,
        modified_at: new Date().toISOString(),
        is_lower_score_better: lower,
      };
      await this.repo.put(rec);
      return rec;
    });
  }

  update(identity: Identity, body: FeedbackConfigUpdate): Promise<FeedbackConfigRecord> {
    return this.serialized(identity.tenant_id, body.feedback_key, async () => {
      const existing = await this.repo.get(identity.tenant_id, body.feedback_key);
      if (!existing) throw notFound(`Feedback config ${JSON.stringify(body.feedback_key)}`);
      const rec: FeedbackConfigRecord = {
        ...existing,
        ...(body.feedback_config ? { feedback_config: body.feedback_config } : {}),
        ...(body.is_lower_score_better !== undefined ? { is_lower_score_better: body.is_lower_score_better } : {}),
        modified_at: new Date().toISOString(),
      };
      await this.repo.put(rec);
      return rec;
    });
  }

  delete(identity: Identity, key: string): Promise<void> {
    return this.serialized(identity.tenant_id, key, async () => {
      const existing = await this.repo.get(identity.tenant_id, key);
      if (!existing) throw notFound(`Feedback config ${JSON.stringify(key)}`);
      await this.repo.put({ ...existing, modified_at: new Date().toISOString() }, true);
    });
  }

  /**
   * Feedback that carries no feedback_config of its own is checked against its key's stored config.
   * Throws ValidationFailed (422) naming the field.
   */
  async enforce(tenantId: string, f: { key: string; score?: number | null; value?: unknown; feedback_config?: FeedbackConfig | null }, root: (string | number)[] = ['body']): Promise<void> {
    if (f.feedback_config) return;
    const stored = await this.repo.get(tenantId, f.key);
    if (!stored) return;
    const problems = feedbackConfigProblems({ score: f.score, value: f.value, feedback_config: stored.feedback_config }, root).map((p) => ({
      ...p,
      msg: `${p.msg} (the stored feedback config of key ${JSON.stringify(f.key)})`,
    }));
    if (problems.length > 0) throw new ValidationFailed(problems);
  }

  private serialized<T>(tenant: string, key: string, fn: () => Promise<T>): Promise<T> {
    const id = `${tenant}\u0000${key}`;
    const prev = this.locks.get(id) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.locks.set(id, tail);
    void tail.then(() => {
      if (this.locks.get(id) === tail) this.locks.delete(id);
    });
    return run;
  }
}
