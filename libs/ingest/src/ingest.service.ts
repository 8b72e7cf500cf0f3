import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  feedbackCreateSchema,
  feedbackEventFromCreate,
  microsToIso,
  runCreateSchema,
  runUpdateWithIdSchema,
  TOPICS,
  type FeedbackCreate,
  type Identity,
  type RunCreate,
  type RunEvent,
  type RunUpdate,
  type ValidationErrorItem,
} from '@th/contracts';
import { EventBus, type OutgoingMessage } from '@th/bus';
import { byIdsCondition, ClickHouse, RUNS_BY_ID } from '@th/clickhouse';
import {
  DomainError,
  ErrorCode,
  EventLoopPacer,
  JsonTooDeepError,
  jsonTooDeepItem,
  multipartBoundary,
  parseClientJson,
  parseMultipartOr422,
  storableValueProblems,
  toValidationErrors,
  ValidationFailed,
} from '@th/platform';
import { dottedSegment, parseDottedOrder } from './run-merge';
import { ProjectDirectory } from './project-directory';
import { INGEST_OPTIONS, type IngestOptions } from './ingest.options';
import { nextVersion } from './run-writer.service';
import { UsageGate, applyRetention } from './workspace-limits';
import { fastRunCreate, fastRunUpdateWithId } from './fast-validate';

type PatchWithId = RunUpdate & { id: string };
export interface Attachment {
  name: string;
  mime_type: string;
  data: Buffer;
}

const DEFAULT_PROJECT = 'default';
const EVENT_FIELDS = [
  'session_id', 'trace_id', 'parent_run_id', 'dotted_order', 'name', 'run_type', 'start_time', 'end_time', 'inputs', 'outputs',
  'extra', 'events', 'error', 'serialized', 'tags', 'reference_example_id', 'trace_tier',
] as const;
const EVENT_FIELD_SET: ReadonlySet<string> = new Set(EVENT_FIELDS);
const RUN_SPLIT_FIELDS = new Set(['inputs', 'outputs', 'events', 'extra', 'error', 'serialized']);

/** A part's JSON value, or undefined with the error recorded (invalid, or nested deeper than MAX_JSON_DEPTH). */
function partJson(name: string, data: Buffer, errors: ValidationErrorItem[]): unknown {
  try {
    return parseClientJson(data.toString('utf8'));
  } catch (err) {
    if (err instanceof JsonTooDeepError) errors.push(jsonTooDeepItem(err, ['body', name]));
    else errors.push({ loc: ['body', name], msg: `JSON decode error: ${(err as Error).message}`, type: 'json_invalid' });
    return undefined;
  }
}

/** A `feedback.<id>` part: the feedback object (feedback_config enforced), its id from the body or the name. */
function parseFeedbackPart(name: string, id: string, data: Buffer, errors: ValidationErrorItem[]): (FeedbackCreate & { id: string }) | null {
  const value = partJson(name, data, errors);
  if (value === undefined) return null;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    errors.push({ loc: ['body', name], msg: 'Input should be an object', type: 'dict_type' });
    return null;
  }
  // The rule of POST /feedback: feedback is not a run, its strings must be storable text.
  const unstorable = storableValueProblems(value, ['body', name]);
  if (unstorable.length > 0) {
    errors.push(...unstorable);
    return null;
  }
  const r = feedbackCreateSchema.safeParse({ id, ...value });
  if (!r.success) {
    errors.push(...toValidationErrors(r.error, ['body', name]));
    return null;
  }
  if (r.data.id !== id.toLowerCase()) {
    errors.push({ loc: ['body', name, 'id'], msg: `Feedback id ${r.data.id} does not match the part name`, type: 'value_error' });
    return null;
  }
  return { ...r.data, id: r.data.id ?? id };
}

function receivedAt(): string {
  return microsToIso(Date.now() * 1000);
}

/** The one use case behind every run write (POST, PATCH, batch, multipart). */
@Injectable()
export class IngestService {
  private usage?: UsageGate;

  constructor(
    private readonly bus: EventBus,
    private readonly projects: ProjectDirectory,
    private readonly ch: ClickHouse,
    @Inject(INGEST_OPTIONS) private readonly options: IngestOptions,
  ) {}

  async ingest(identity: Identity, posts: RunCreate[], patches: PatchWithId[], attachments: Map<string, Attachment[]> = new Map()): Promise<void> {
    if (posts.length + patches.length === 0) return;
    // Before anything is written (toEvents may create projects): a refused request leaves nothing behind.
    await (this.usage ??= new UsageGate(this.ch)).check(identity, posts);
    const events = await this.toEvents(identity, posts, patches, attachments);
    applyRetention(identity, events);
    await this.bus.publish(TOPICS.runs, events);
  }

  /** POST /runs/multipart: validates every part before anything is produced. */
  async ingestMultipart(identity: Identity, contentType: string | undefined, body: Buffer | undefined): Promise<void> {
    const boundary = multipartBoundary(contentType);
    if (!boundary) {
      throw new DomainError(ErrorCode.UnsupportedMediaType, 'Expected a multipart/form-data body with a boundary');
    }
    // One pacer for the whole request: parsing and checking a 25 MB body of small parts takes several slices.
    const pacer = new EventLoopPacer();
    const parts = await parseMultipartOr422(body ?? Buffer.alloc(0), boundary, pacer);
    const ops = { post: new Map<string, Record<string, unknown>>(), patch: new Map<string, Record<string, unknown>>() };
    const attachments = new Map<string, Attachment[]>();
    const feedback: (FeedbackCreate & { id: string })[] = [];
    const errors: ValidationErrorItem[] = [];
    for (const part of parts) {
      if (pacer.due()) await pacer.yield();
      const segs = part.name.split('.');
      const [kind, id] = segs;
      if ((kind === 'post' || kind === 'patch') && id && segs.length <= 3) {
        const value = partJson(part.name, part.data, errors);
        if (value === undefined) continue;
        const target = ops[kind].get(id) ?? {};
        ops[kind].set(id, target);
        if (segs.length === 2) {
          if (typeof value !== 'object' || value === null || Array.isArray(value)) {
            errors.push({ loc: ['body', part.name], msg: 'Input should be an object', type: 'dict_type' });
            continue;
          }
          for (const [k, v] of Object.entries(value)) if (!(k in target) || !RUN_SPLIT_FIELDS.has(k)) target[k] = v;
        } else if (RUN_SPLIT_FIELDS.has(segs[2])) {
          target[segs[2]] = value;
        } else {
          errors.push({ loc: ['body', part.name], msg: `Unknown run field part "${segs[2]}"`, type: 'value_error' });
        }
      } else if (kind === 'attachment' && id && segs.length >= 3) {
        const name = segs.slice(2).join('.');
        const list = attachments.get(id) ?? [];
        list.push({ name, mime_type: part.contentType.split(';')[0].trim(), data: part.data });
        attachments.set(id, list);
      } else if (kind === 'feedback' && id && segs.length === 2) {
        const f = parseFeedbackPart(part.name, id, part.data, errors);
        if (f) feedback.push(f);
      } else {
        errors.push({ loc: ['body', part.name], msg: `Unknown part name "${part.name}"`, type: 'value_error' });
      }
    }
    const posts: RunCreate[] = [];
    const patches: PatchWithId[] = [];
    for (const [id, raw] of ops.post) {
      if (pacer.due()) await pacer.yield();
      const fast = fastRunCreate({ ...raw, id });
      if (fast) {
        posts.push(fast);
        continue;
      }
      const r = runCreateSchema.safeParse({ ...raw, id });
      if (r.success) posts.push(r.data);
      else errors.push(...toValidationErrors(r.error, ['body', `post.${id}`]));
    }
    for (const [id, raw] of ops.patch) {
      if (pacer.due()) await pacer.yield();
      const fast = fastRunUpdateWithId({ ...raw, id });
      if (fast) {
        patches.push(fast);
        continue;
      }
      const r = runUpdateWithIdSchema.safeParse({ ...raw, id });
      if (r.success) patches.push(r.data as PatchWithId);
      else errors.push(...toValidationErrors(r.error, ['body', `patch.${id}`]));
    }
    for (const id of attachments.keys()) {
      if (!ops.post.has(id) && !ops.patch.has(id)) {
        errors.push({ loc: ['body', `attachment.${id}`], msg: 'Attachment for a run not in this request', type: 'value_error' });
      }
    }
    if (errors.length > 0) throw new ValidationFailed(errors);
    await this.ingest(identity, posts, patches, attachments);
    if (feedback.length > 0) {
      // The same event the feedback service publishes for POST /feedback; the feedback writer stores it.
      const now = Date.now() * 1000;
      await this.bus.publish(
        TOPICS.feedback,
        feedback.map((f) => ({ key: f.run_id ?? f.session_id ?? f.id, value: feedbackEventFromCreate(identity.tenant_id, f, nextVersion(), now) })),
      );
    }
  }

  private async toEvents(
    identity: Identity,
    posts: RunCreate[],
    patches: PatchWithId[],
    attachments: Map<string, Attachment[]>,
  ): Promise<OutgoingMessage<RunEvent>[]> {
    const tenant = identity.tenant_id;
    const errors: ValidationErrorItem[] = [];
    const names = new Set<string>();
    const ids = new Set<string>();
    const projectOf = (r: RunCreate | RunUpdate, isPost: boolean): string | undefined => {
      if (r.session_id) return undefined;
      const name = r.session_name ?? (r.address ? r.address : isPost ? DEFAULT_PROJECT : undefined);
      return name ?? undefined;
    };
    posts.forEach((r) => {
      if (r.session_id) ids.add(r.session_id);
      const n = projectOf(r, true);
      if (n) names.add(n);
    });
    patches.forEach((r) => {
      if (r.session_id) ids.add(r.session_id);
      const n = projectOf(r, false);
      if (n) names.add(n);
    });
    // Everything that can be checked without writing is checked first: a rejected batch creates nothing.
    // A 25 MB batch is some 20,000 runs to check and build events for: give the event loop way between slices.
    const pacer = new EventLoopPacer();
    for (const [i, r] of posts.entries()) {
      if (pacer.due()) await pacer.yield();
      if (r.dotted_order && r.id) this.checkDottedOrder(r.dotted_order, r.id, ['body', 'post', i, 'dotted_order'], errors);
    }
    for (const [i, p] of patches.entries()) {
      if (pacer.due()) await pacer.yield();
      if (p.dotted_order) this.checkDottedOrder(p.dotted_order, p.id, ['body', 'patch', i, 'dotted_order'], errors);
    }
    const missing = new Set(ids.size > 0 ? (await this.projects.resolve(identity, { names: [], ids: [...ids] })).missing_ids : []);
    posts.forEach((r, i) => {
      if (r.session_id && missing.has(r.session_id)) errors.push({ loc: ['body', 'post', i, 'session_id'], msg: `Project ${r.session_id} not found`, type: 'value_error' });
    });
    patches.forEach((p, i) => {
      if (p.session_id && missing.has(p.session_id)) errors.push({ loc: ['body', 'patch', i, 'session_id'], msg: `Project ${p.session_id} not found`, type: 'value_error' });
    });
    if (errors.length > 0) throw new ValidationFailed(errors);
    const resolved = names.size > 0 ? await this.projects.resolve(identity, { names: [...names], ids: [] }) : { by_name: {} as Record<string, string>, missing_ids: [] };

    // Runs created without trace_id/dotted_order (bare POST /runs) get them here, from their parent.
    const postsById = new Map<string, RunCreate>();
    // Copied only when something is filled in (the SDK sends both).
    const prepared = posts.map((r) =>
      r.id && r.start_time ? (r as RunCreate & { id: string; start_time: string }) : { ...r, id: r.id ?? randomUUID(), start_time: r.start_time ?? microsToIso(Date.now() * 1000) },
    );
    prepared.forEach((r) => postsById.set(r.id, r));
    const needParent = prepared.filter((r) => !r.dotted_order && r.parent_run_id && !postsById.has(r.parent_run_id)).map((r) => r.parent_run_id!);
    const parents = await this.lookupRuns(tenant, needParent);

    const messages: OutgoingMessage<RunEvent>[] = [];
    const received = receivedAt();
    const orderOf = (r: RunCreate & { id: string; start_time: string }, depth = 0): { trace_id: string; dotted_order: string } => {
      if (r.dotted_order) return { trace_id: r.trace_id ?? parseDottedOrder(r.dotted_order)?.ids[0] ?? r.id, dotted_order: r.dotted_order };
      const seg = dottedSegment(r.start_time, r.id);
      if (!r.parent_run_id || depth > 100) return { trace_id: r.trace_id ?? r.id, dotted_order: seg };
      const inBatch = postsById.get(r.parent_run_id) as (RunCreate & { id: string; start_time: string }) | undefined;
      const parent = inBatch ? orderOf(inBatch, depth + 1) : parents.get(r.parent_run_id);
      if (!parent) return { trace_id: r.trace_id ?? r.parent_run_id, dotted_order: seg };
      return { trace_id: parent.trace_id, dotted_order: `${parent.dotted_order}.${seg}` };
    };

    for (const r of prepared) {
      if (pacer.due()) await pacer.yield();
      const sessionId = this.sessionIdFor(r, resolved.by_name, true);
      const { trace_id, dotted_order } = orderOf(r);
      messages.push(this.event('post', tenant, r.id, trace_id, r, received, attachments.get(r.id), sessionId, trace_id, dotted_order));
    }
    const patchTraceLookups = patches.filter((p) => !p.trace_id && !p.dotted_order).map((p) => p.id);
    const patchTraces = await this.lookupRuns(tenant, patchTraceLookups);
    for (const p of patches) {
      if (pacer.due()) await pacer.yield();
      const sessionId = this.sessionIdFor(p, resolved.by_name, false);
      const trace = p.trace_id ?? (p.dotted_order ? parseDottedOrder(p.dotted_order)?.ids[0] : undefined) ?? patchTraces.get(p.id)?.trace_id;
      messages.push(this.event('patch', tenant, p.id, trace ?? p.id, p, received, attachments.get(p.id), sessionId));
    }
    return messages;
  }

  private sessionIdFor(
    r: RunCreate | RunUpdate,
    byName: Record<string, string>,
    isPost: boolean,
  ): string | undefined {
    if (r.session_id) return r.session_id;
    const name = r.session_name ?? r.address ?? (isPost ? DEFAULT_PROJECT : undefined);
    return name ? byName[name] : undefined;
  }

  private checkDottedOrder(dotted: string, id: string, loc: (string | number)[], errors: ValidationErrorItem[]): void {
    const parsed = parseDottedOrder(dotted);
    if (!parsed) errors.push({ loc, msg: 'dotted_order is malformed', type: 'value_error' });
    else if (parsed.ids[parsed.ids.length - 1] !== id) errors.push({ loc, msg: 'dotted_order must end with the run id', type: 'value_error' });
  }

  private event(
    op: 'post' | 'patch',
    tenant: string,
    id: string,
    key: string,
    r: RunCreate | RunUpdate,
    received: string,
    att: Attachment[] | undefined,
    sessionId: string | undefined,
    traceId?: string,
    dottedOrder?: string,
  ): OutgoingMessage<RunEvent> {
    // The event's fields: the supplied ones, with session_id (and for a POST trace_id/dotted_order) as resolved here.
    const fields: RunEvent['fields'] = {};
    const out = fields as Record<string, unknown>;
    for (const k in r) {
      const v = (r as Record<string, unknown>)[k];
      if (v !== undefined && v !== null && EVENT_FIELD_SET.has(k)) out[k] = v;
    }
    if (sessionId !== undefined && sessionId !== null) out.session_id = sessionId;
    else delete out.session_id;
    if (traceId !== undefined) out.trace_id = traceId;
    if (dottedOrder !== undefined) out.dotted_order = dottedOrder;
    const value: RunEvent = { kind: 'run', op, tenant_id: tenant, id, received_at: received, fields };
    if (att && att.length > 0) value.attachments = att.map((a) => ({ name: a.name, mime_type: a.mime_type, data_base64: a.data.toString('base64') }));
    return { key: key, value };
  }

  /** trace_id and dotted_order of stored runs, for children and patches that do not carry them. */
  private async lookupRuns(tenant: string, ids: string[]): Promise<Map<string, { trace_id: string; dotted_order: string }>> {
    const out = new Map<string, { trace_id: string; dotted_order: string }>();
    if (ids.length === 0) return out;
    const byIds = byIdsCondition('ids', [...new Set(ids)]);
    const rows = await this.ch.query<{ id: string; trace_id: string; dotted_order: string }>(
      `SELECT id, trace_id, dotted_order FROM ${RUNS_BY_ID} FINAL WHERE tenant_id = {tenant:UUID} AND ${byIds.sql} AND is_deleted = 0`,
      { tenant, ...byIds.params },
    );
    for (const r of rows) out.set(r.id, { trace_id: r.trace_id, dotted_order: r.dotted_order });
    return out;
  }

  get limits(): { maxBodyBytes: number; batchSizeLimit: number } {
    return { maxBodyBytes: this.options.maxBodyBytes, batchSizeLimit: this.options.batchSizeLimit };
  }
}
