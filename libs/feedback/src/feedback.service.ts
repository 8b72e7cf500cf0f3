import { Injectable, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  TOPICS,
  feedbackConfigProblems,
  feedbackEventFromCreate,
  feedbackFromEvent,
  microsToIso,
  type Feedback,
  type FeedbackCreate,
  type FeedbackEvent,
  type FeedbackUpdate,
  type Identity,
  type TenantScope,
} from '@th/contracts';
import { EventBus } from '@th/bus';
import { EventLoopPacer, ValidationFailed, conflict, jsonTextOf, notFound, prepareJsonText } from '@th/platform';
import { FeedbackConfigService } from './feedback-config.service';
import { FeedbackRepository } from './feedback.repository';

/** Process-wide monotonic version: microseconds since the epoch, never repeating. */
let lastVersion = 0;
export function nextFeedbackVersion(): number {
  lastVersion = Math.max(lastVersion + 1, Date.now() * 1000);
  return lastVersion;
}

/**
 * Every feedback write: HTTP create/update/delete here, and any other producer (experiment upload)
 * through `submit`. All of them publish whole feedback states on the `feedback` topic; the writer
 * stores them. A 2xx means the bus acknowledged (in standalone: the row is in ClickHouse).
 */
@Injectable()
export class FeedbackService {
  constructor(
    private readonly bus: EventBus,
    private readonly repo: FeedbackRepository,
    /** The workspace's stored feedback configs, enforced on feedback without its own. */
    @Optional() private readonly configs?: FeedbackConfigService,
  ) {}

  async create(identity: Identity, body: FeedbackCreate): Promise<Feedback> {
    const id = body.id ?? randomUUID();
    await this.configs?.enforce(identity.tenant_id, body);
    const existing = await this.repo.findById(identity, id);
    if (existing && (existing.run_id ?? null) !== (body.run_id ?? null)) {
      throw conflict(`Feedback ${id} already exists for another run`);
    }
    const [event] = await this.submit(identity, [{ ...body, id }]);
    return feedbackFromEvent(event, { value: body.value, correction: body.correction });
  }

  /**
   * Publishes already validated feedback (FeedbackCreate has passed feedbackCreateSchema, which
   * enforces feedback_config). Fills trace and project from the run when it is already stored.
   */
  async submit(scope: TenantScope, items: (FeedbackCreate & { id?: string })[]): Promise<FeedbackEvent[]> {
    const now = Date.now() * 1000;
    const events: FeedbackEvent[] = [];
    const pacer = new EventLoopPacer();
    for (const item of items) {
      let f = { ...item, id: item.id ?? randomUUID() };
      if (f.run_id && (!f.trace_id || !f.session_id)) {
        const loc = await this.repo.findRunLocation(scope, f.run_id);
        if (loc) f = { ...f, trace_id: f.trace_id ?? loc.trace_id, session_id: f.session_id ?? loc.session_id };
      }
      // A large value or correction is serialized in slices (one JSON.stringify of 25 MB holds the event loop).
      await prepareJsonText(f.value, pacer);
      await prepareJsonText(f.correction, pacer);
      events.push(feedbackEventFromCreate(scope.tenant_id, f, nextFeedbackVersion(), now, { value: jsonTextOf(f.value), correction: jsonTextOf(f.correction) }));
    }
    await this.publish(events);
    return events;
  }

  async update(identity: Identity, id: string, patch: FeedbackUpdate): Promise<Feedback> {
    const current = await this.get(identity, id);
    const next: FeedbackEvent = { ...current };
    if (patch.score !== undefined) next.score = patch.score;
    if (patch.value !== undefined) next.value_json = patch.value === null ? null : JSON.stringify(patch.value);
    if (patch.comment !== undefined) next.comment = patch.comment;
    if (patch.correction !== undefined) next.correction_json = patch.correction === null ? null : JSON.stringify(patch.correction);
    if (patch.feedback_config !== undefined) next.feedback_config = patch.feedback_config;
    const value: unknown = next.value_json === null ? null : JSON.parse(next.value_json);
    const problems = feedbackConfigProblems({ score: next.score, value, feedback_config: next.feedback_config }, ['body']);
    if (problems.length > 0) throw new ValidationFailed(problems);
    await this.configs?.enforce(identity.tenant_id, { key: next.key, score: next.score, value, feedback_config: next.feedback_config });
    next.modified_at = microsToIso(Date.now() * 1000);
    next.version = Math.max(nextFeedbackVersion(), current.version + 1);
    await this.publish([next]);
    return feedbackFromEvent(next);
  }

  async delete(identity: Identity, id: string): Promise<void> {
    const current = await this.get(identity, id);
    await this.publish([{ ...current, is_deleted: true, modified_at: microsToIso(Date.now() * 1000), version: Math.max(nextFeedbackVersion(), current.version + 1) }]);
  }

  private async get(identity: Identity, id: string): Promise<FeedbackEvent> {
    const current = await this.repo.findById(identity, id);
    if (!current) throw notFound(`Feedback ${id}`);
    return current;
  }

  private async publish(events: FeedbackEvent[]): Promise<void> {
    if (events.length === 0) return;
    // Keyed by run (or project): one run's feedback stays in order on one partition.
    await this.bus.publish(
      TOPICS.feedback,
      events.map((e) => ({ key: e.run_id ?? e.session_id ?? e.id, value: e })),
    );
  }
}
