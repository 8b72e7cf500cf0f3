import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import {
  TOPICS,
  exampleListQuerySchema,
  feedbackEventFromCreate,
  microsToIso,
  toEpochMicros,
  type Dataset,
  type ExperimentUploadRequest,
  type ExperimentUploadResponse,
  type FeedbackEvent,
  type Identity,
  type RunEvent,
  type TopicName,
  type TopicPayload,
  type UploadFeedback,
} from '@th/contracts';
import { EventBus, type OutgoingMessage } from '@th/bus';
import { AuditPublisher } from '@th/audit-client';
import { DomainError, ErrorCode, EventLoopPacer, badRequest, conflict } from '@th/platform';
import { DATASETS_DATA_SOURCE } from '../datasets.module';
import { DatasetsService } from '../datasets.service';
import { ExamplesService } from '../examples.service';
import { EXPERIMENT_PROJECTS, type ExperimentProjectsPort } from './experiment-ports';

/** Events are published in slices: one bus request stays well under Kafka's message-batch limits. */
const PUBLISH_CHUNK = 1000;
const DEFAULT_RUN_NAME = 'Target';

/** Feedback versions: microseconds, never repeating in this process (a tombstone must outrank its feedback). */
let lastVersion = 0;
function nextFeedbackVersion(): number {
  lastVersion = Math.max(lastVersion + 1, Date.now() * 1000);
  return lastVersion;
}

const iso = (v: string) => microsToIso(toEpochMicros(v) as number);

/** The dotted_order of a root run: its start (ms), execution order 1, its id. */
function rootDottedOrder(startIso: string, id: string): string {
  const d = new Date(Math.floor((toEpochMicros(startIso) as number) / 1000));
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}T${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}${p(d.getUTCMilliseconds(), 3)}001Z${id}`;
}

interface Plan {
  /** The dataset to reuse (created by an earlier upload), or the one to create. */
  existing: Dataset | null;
  create: { id: string; name: string; description: string | null } | null;
  /** Row ids that are already examples of the reused dataset: their examples are kept as they are. */
  knownExamples: Set<string>;
}

/**
 * POST /datasets/upload-experiment: every rule is checked before anything is written; then the
 * experiment (a project) is created, the dataset and the new examples are written in one
 * transaction, and the runs and feedback are published before that transaction commits. A failure
 * after the project exists removes it again, with whatever of its runs and feedback was published.
 */
@Injectable()
export class ExperimentUploadService {
  constructor(
    @Inject(DATASETS_DATA_SOURCE) private readonly db: DataSource,
    private readonly datasets: DatasetsService,
    private readonly examples: ExamplesService,
    @Inject(EXPERIMENT_PROJECTS) private readonly projects: ExperimentProjectsPort,
    private readonly bus: EventBus,
    private readonly audit: AuditPublisher,
  ) {}

  /** Tracked: Success with the experiment and dataset, or Failure. */
  upload(identity: Identity, body: ExperimentUploadRequest): Promise<ExperimentUploadResponse> {
    return this.audit.track(
      { identity },
      () => this.apply(identity, body),
      (r) => [
        { type: 'tracer_session', id: r.experiment.id },
        { type: 'dataset', id: String(r.dataset.id) },
      ],
    );
  }

  private async apply(identity: Identity, body: ExperimentUploadRequest): Promise<ExperimentUploadResponse> {
    const plan = await this.plan(identity, body);
    const clash = await this.projects.list(identity, { name: body.experiment_name, offset: 0, limit: 1 });
    if (clash.length > 0) throw conflict(`An experiment (project) named "${body.experiment_name}" already exists`);

    const datasetId = plan.existing?.id ?? (plan.create as NonNullable<Plan['create']>).id;
    const experiment = await this.projects.createExperiment(identity, {
      name: body.experiment_name,
      description: body.experiment_description ?? null,
      extra: { metadata: { ...(body.experiment_metadata ?? {}) } },
      start_time: body.experiment_start_time,
      end_time: body.experiment_end_time,
      reference_dataset_id: datasetId,
    });
    const runIds = body.results.map(() => randomUUID());
    const feedback = this.feedbackEvents(identity, body, experiment.id, runIds);
    try {
      await this.db.transaction(async (m) => {
        if (plan.create) {
          await this.datasets.create(
            identity,
            { id: plan.create.id, name: plan.create.name, description: plan.create.description, data_type: 'kv', externally_managed: true },
            { createdByUpload: true, manager: m },
          );
        }
        await this.writeExamples(identity, datasetId, body, plan.knownExamples, m);
        // Published inside the transaction: a refused publish rolls the examples back.
        await this.publish(TOPICS.runs, (await this.runEvents(identity, body, experiment.id, runIds)).map((e) => ({ key: e.id, value: e })));
        await this.publish(TOPICS.feedback, feedback.map((e) => ({ key: e.run_id ?? e.session_id ?? e.id, value: e })));
      });
    } catch (err) {
      await this.undo(identity, experiment.id, feedback, err);
      throw err;
    }
    return { experiment, dataset: await this.datasets.get(identity, datasetId) };
  }

  /** Rules 2, 3 and 4: which dataset the upload goes to; nothing is written here. */
  private async plan(identity: Identity, body: ExperimentUploadRequest): Promise<Plan> {
    let existing: Dataset | null = null;
    if (body.dataset_id) {
      existing = await this.datasets.get(identity, body.dataset_id).catch((err: unknown) => {
        if (err instanceof DomainError && err.code === ErrorCode.NotFound) return null;
        throw err;
      });
      if (existing && body.dataset_name && existing.name !== body.dataset_name) {
        throw conflict(`Rule 2: dataset_id ${body.dataset_id} names the dataset "${existing.name}", not "${body.dataset_name}"`);
      }
    }
    if (!existing && body.dataset_name) {
      const byName = await this.datasets.findByName(identity, body.dataset_name);
      if (byName && body.dataset_id) {
        throw conflict(`Rule 2: the dataset named "${body.dataset_name}" has id ${byName.id}, not dataset_id ${body.dataset_id}`);
      }
      existing = byName;
    }
    if (existing && !existing.created_by_upload) {
      throw badRequest(`Rule 3: dataset ${existing.id} ("${existing.name}") was not created by experiment upload; uploading experiments to it is not supported`);
    }
    let create: Plan['create'] = null;
    if (!existing) {
      const id = body.dataset_id ?? randomUUID();
      const name = body.dataset_name ?? `Uploaded dataset ${id}`;
      if (!body.dataset_name && (await this.datasets.findByName(identity, name))) throw conflict(`Rule 2: the generated dataset name "${name}" is taken`);
      create = { id, name, description: body.dataset_description ?? null };
    }
    const knownExamples = new Set<string>();
    const rowIds = body.results.map((r) => r.row_id);
    for (let i = 0; i < rowIds.length; i += 5000) {
      const chunk = rowIds.slice(i, i + 5000);
      const found = await this.examples.list(identity, exampleListQuerySchema.parse({ id: chunk, limit: chunk.length }));
      for (const e of found) {
        if (!existing || e.dataset_id !== existing.id) throw conflict(`row_id ${e.id} is already an example of another dataset (${e.dataset_id})`);
        knownExamples.add(e.id);
      }
    }
    return { existing, create, knownExamples };
  }

  private async writeExamples(identity: Identity, datasetId: string, body: ExperimentUploadRequest, known: Set<string>, m: EntityManager): Promise<void> {
    const rows = body.results.flatMap((r, i) => (known.has(r.row_id) ? [] : [{ i, example: { id: r.row_id, inputs: r.inputs, outputs: r.expected_outputs ?? null } }]));
    if (rows.length === 0) return;
    await this.examples.createMany(
      identity,
      datasetId,
      rows.map((r) => r.example),
      { manager: m, locOf: (k) => ['body', 'results', rows[k].i] },
    );
  }

  /** The rows' runs, made in slices of the event loop (tens of thousands of rows). */
  private async runEvents(identity: Identity, body: ExperimentUploadRequest, sessionId: string, runIds: string[]): Promise<RunEvent[]> {
    const receivedAt = microsToIso(Date.now() * 1000);
    const pacer = new EventLoopPacer();
    const events: RunEvent[] = [];
    for (const [i, r] of body.results.entries()) {
      if (pacer.due()) await pacer.yield();
      events.push(this.runEvent(identity, r, sessionId, runIds[i], receivedAt));
    }
    return events;
  }

  private runEvent(identity: Identity, r: ExperimentUploadRequest['results'][number], sessionId: string, id: string, receivedAt: string): RunEvent {
    const start = iso(r.start_time);
    return {
      kind: 'run',
      op: 'post',
      tenant_id: identity.tenant_id,
      id,
      received_at: receivedAt,
      fields: {
        session_id: sessionId,
        trace_id: id,
        parent_run_id: null,
        dotted_order: rootDottedOrder(start, id),
        name: r.run_name ?? DEFAULT_RUN_NAME,
        run_type: 'chain',
        start_time: start,
        end_time: iso(r.end_time),
        inputs: r.inputs,
        outputs: r.actual_outputs ?? null,
        extra: { metadata: { ...(r.run_metadata ?? {}) } },
        error: r.error ?? null,
        reference_example_id: r.row_id,
      },
    };
  }

  private feedbackEvents(identity: Identity, body: ExperimentUploadRequest, sessionId: string, runIds: string[]): FeedbackEvent[] {
    const now = Date.now() * 1000;
    const event = (f: UploadFeedback, runId: string | null) =>
      feedbackEventFromCreate(
        identity.tenant_id,
        {
          id: randomUUID(),
          run_id: runId,
          trace_id: runId,
          session_id: sessionId,
          key: f.key,
          score: f.score ?? null,
          value: f.value ?? null,
          comment: f.comment ?? null,
          correction: f.correction ?? null,
          feedback_source: f.feedback_source ?? { type: 'api' },
          feedback_config: f.feedback_config ?? null,
          created_at: f.created_at ?? null,
          modified_at: f.modified_at ?? null,
        },
        nextFeedbackVersion(),
        now,
      );
    return [
      ...body.results.flatMap((r, i) => (r.evaluation_scores ?? []).map((f) => event(f, runIds[i]))),
      ...(body.summary_experiment_scores ?? []).map((f) => event(f, null)),
    ];
  }

  private async publish<T extends TopicName>(topic: T, messages: OutgoingMessage<TopicPayload<T>>[]): Promise<void> {
    for (let i = 0; i < messages.length; i += PUBLISH_CHUNK) await this.bus.publish(topic, messages.slice(i, i + PUBLISH_CHUNK));
  }

  /** After a failed write: the project and its runs go, and the feedback is tombstoned. */
  private async undo(identity: Identity, sessionId: string, feedback: FeedbackEvent[], cause: unknown): Promise<void> {
    try {
      await this.projects.discardExperiment(identity, sessionId);
      const now = microsToIso(Date.now() * 1000);
      await this.publish(
        TOPICS.feedback,
        feedback.map((e) => ({ key: e.run_id ?? e.session_id ?? e.id, value: { ...e, is_deleted: true, modified_at: now, version: nextFeedbackVersion() } })),
      );
    } catch (err) {
      throw new DomainError(ErrorCode.Internal, `Experiment upload failed and its partial writes could not all be removed: ${(err as Error).message}`, undefined, {
        cause: [cause, err],
      });
    }
  }
}
