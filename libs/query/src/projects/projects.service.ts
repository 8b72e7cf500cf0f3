import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  TOPICS,
  type Experiment,
  type Identity,
  type Project,
  type ProjectCreate,
  type ProjectListQuery,
  type ProjectResolveRequest,
  type ProjectResolveResponse,
  type ProjectUpdate,
} from '@th/contracts';
import { EventBus } from '@th/bus';
import { AuditPublisher } from '@th/audit-client';
import { ValidationFailed, conflict, notFound } from '@th/platform';
import { ProjectEntity } from './project.entity';
import { ProjectsRepository } from './projects.repository';
import { RunsService } from '../runs/runs.service';
import { FeedbackStatsRepository } from '../runs/feedback-stats.repository';

/** Tracing projects (sessions): metadata in Postgres, statistics from the runs in ClickHouse. */
@Injectable()
export class ProjectsService {
  constructor(
    private readonly repo: ProjectsRepository,
    private readonly runs: RunsService,
    private readonly bus: EventBus,
    private readonly audit: AuditPublisher,
    private readonly feedbackStats: FeedbackStatsRepository,
  ) {}

  async create(identity: Identity, body: ProjectCreate, upsert: boolean): Promise<Project> {
    const now = new Date();
    const entity = Object.assign(new ProjectEntity(), {
      id: body.id ?? randomUUID(),
      tenant_id: identity.tenant_id,
      name: body.name,
      description: body.description ?? null,
      extra: body.extra ?? null,
      start_time: body.start_time ? new Date(body.start_time) : now,
      end_time: body.end_time ? new Date(body.end_time) : null,
      reference_dataset_id: body.reference_dataset_id ?? null,
      default_dataset_id: body.default_dataset_id ?? null,
      trace_tier: body.trace_tier ?? null,
      created_at: now,
      modified_at: now,
    });
    const inserted = await this.repo.insert(entity);
    if (inserted) return this.present(inserted);
    const existing = await this.repo.findByName(identity, body.name);
    if (upsert && existing) return this.present(existing);
    throw conflict(existing ? `Project with name "${body.name}" already exists` : `Project with id ${entity.id} already exists`);
  }

  async get(identity: Identity, id: string, includeStats: boolean, statsStartTime?: string): Promise<Project> {
    const p = await this.repo.findById(identity, id);
    if (!p) throw notFound(`Project ${id}`);
    return includeStats ? this.withStats(identity, p, statsStartTime) : this.present(p);
  }

  async list(identity: Identity, q: ProjectListQuery): Promise<Project[]> {
    let metadata: Record<string, unknown> | undefined;
    if (q.metadata) {
      try {
        metadata = JSON.parse(q.metadata) as Record<string, unknown>;
      } catch {
        throw new ValidationFailed([{ loc: ['query', 'metadata'], msg: 'metadata must be a JSON object', type: 'json_invalid' }]);
      }
    }
    const rows = await this.repo.list(
      identity,
      { ids: q.id, name: q.name, nameContains: q.name_contains, referenceDatasets: q.reference_dataset, referenceFree: q.reference_free, metadata },
      { offset: q.offset, limit: q.limit },
    );
    return q.include_stats ? Promise.all(rows.map((r) => this.withStats(identity, r, q.stats_start_time))) : rows.map((r) => this.present(r));
  }

  /** Tracked (Success or Failure). */
  update(identity: Identity, id: string, body: ProjectUpdate): Promise<Project> {
    return this.audit.track({ identity, resources: [{ type: 'tracer_session', id }] }, () => this.applyUpdate(identity, id, body));
  }

  private async applyUpdate(identity: Identity, id: string, body: ProjectUpdate): Promise<Project> {
    const p = await this.repo.findById(identity, id);
    if (!p) throw notFound(`Project ${id}`);
    const patch: Partial<ProjectEntity> = { modified_at: new Date() };
    if (body.name != null && body.name !== p.name) {
      const clash = await this.repo.findByName(identity, body.name);
      if (clash) throw conflict(`Project with name "${body.name}" already exists`);
      patch.name = body.name;
    }
    if (body.description != null) patch.description = body.description;
    if (body.extra != null) patch.extra = body.extra;
    if (body.end_time != null) patch.end_time = new Date(body.end_time);
    if (body.default_dataset_id != null) patch.default_dataset_id = body.default_dataset_id;
    if (body.trace_tier != null) patch.trace_tier = body.trace_tier;
    await this.repo.update(identity, id, patch);
    return this.present({ ...p, ...patch } as ProjectEntity);
  }

  /** Removes the project and, through the writer, every run in it. Tracked. */
  delete(identity: Identity, id: string): Promise<void> {
    return this.audit.track({ identity, resources: [{ type: 'tracer_session', id }] }, () => this.applyDelete(identity, id));
  }

  private async applyDelete(identity: Identity, id: string): Promise<void> {
    const deleted = await this.repo.delete(identity, id);
    if (!deleted) throw notFound(`Project ${id}`);
    await this.bus.publish(TOPICS.runs, [{ key: id, value: { kind: 'delete_session', tenant_id: identity.tenant_id, session_id: id } }]);
  }

  /**
   * An experiment's project (experiment upload): 409 when the name is taken. Returned as the spec's
   * experiment object with its statistics null: its runs are not written yet.
   */
  async createExperiment(identity: Identity, body: ProjectCreate): Promise<Experiment> {
    const p = Object.assign(new ProjectEntity(), {
      id: body.id ?? randomUUID(),
      tenant_id: identity.tenant_id,
      name: body.name,
      description: body.description ?? null,
      extra: body.extra ?? null,
      start_time: body.start_time ? new Date(body.start_time) : new Date(),
      end_time: body.end_time ? new Date(body.end_time) : null,
      reference_dataset_id: body.reference_dataset_id ?? null,
      default_dataset_id: body.default_dataset_id ?? null,
      trace_tier: body.trace_tier ?? null,
      created_at: new Date(),
      modified_at: new Date(),
    });
    if (!(await this.repo.insert(p))) throw conflict(`Project with name "${body.name}" already exists`);
    return {
      ...this.present(p),
      run_count: null, latency_p50: null, latency_p99: null, first_token_p50: null, first_token_p99: null,
      total_tokens: null, prompt_tokens: null, completion_tokens: null, total_cost: null, prompt_cost: null, completion_cost: null,
      error_rate: null, streaming_rate: null, last_run_start_time: null, last_run_start_time_live: null,
      feedback_stats: null, session_feedback_stats: null, run_facets: null,
      test_run_number: await this.repo.testRunNumber(identity, p),
    };
  }

  /** Undoes createExperiment when the rest of an upload failed: the row and any runs already written, untracked. */
  async discardExperiment(identity: Identity, id: string): Promise<void> {
    await this.repo.delete(identity, id);
    await this.bus.publish(TOPICS.runs, [{ key: id, value: { kind: 'delete_session', tenant_id: identity.tenant_id, session_id: id } }]);
  }

  /** Experiments (projects) with their statistics, in the order of `ids`; missing ids are left out. */
  async experiments(identity: Identity, ids: string[]): Promise<Experiment[]> {
    const rows = new Map((await this.repo.findByIds(identity, ids)).map((p) => [p.id, p]));
    return Promise.all(ids.flatMap((id) => (rows.has(id) ? [this.withStats(identity, rows.get(id) as ProjectEntity)] : [])));
  }

  async resolve(identity: Identity, req: ProjectResolveRequest): Promise<ProjectResolveResponse> {
    const byName = await this.repo.ensureNames(identity, [...new Set(req.names)]);
    const found = new Set((await this.repo.findByIds(identity, [...new Set(req.ids)])).map((p) => p.id));
    return { by_name: byName, missing_ids: req.ids.filter((id) => !found.has(id)) };
  }

  private async withStats(identity: Identity, p: ProjectEntity, statsStartTime?: string): Promise<Experiment> {
    const [s, sessionFeedback, testRunNumber] = await Promise.all([
      this.runs.stats(identity, { session: [p.id], start_time: statsStartTime ?? null }),
      this.feedbackStats.forSessionOnly(identity, p.id),
      this.repo.testRunNumber(identity, p),
    ]);
    // No run carries token counts (e.g. an uploaded experiment): the token fields are null, as the costs are.
    const tokens = s.total_tokens === 0 && s.prompt_tokens === 0 && s.completion_tokens === 0 ? null : s;
    return {
      ...this.present(p),
      run_count: s.run_count,
      latency_p50: s.latency_p50,
      latency_p99: s.latency_p99,
      first_token_p50: s.first_token_p50,
      first_token_p99: s.first_token_p99,
      total_tokens: tokens?.total_tokens ?? null,
      prompt_tokens: tokens?.prompt_tokens ?? null,
      completion_tokens: tokens?.completion_tokens ?? null,
      total_cost: s.total_cost,
      prompt_cost: s.prompt_cost,
      completion_cost: s.completion_cost,
      error_rate: s.error_rate,
      streaming_rate: s.streaming_rate,
      last_run_start_time: s.last_run_start_time,
      last_run_start_time_live: s.last_run_start_time,
      feedback_stats: s.feedback_stats ?? null,
      session_feedback_stats: sessionFeedback,
      run_facets: null,
      test_run_number: testRunNumber,
    };
  }

  private present(p: ProjectEntity): Project {
    return {
      id: p.id,
      tenant_id: p.tenant_id,
      name: p.name,
      description: p.description,
      extra: p.extra,
      start_time: p.start_time.toISOString(),
      end_time: p.end_time ? p.end_time.toISOString() : null,
      reference_dataset_id: p.reference_dataset_id,
      default_dataset_id: p.default_dataset_id,
      trace_tier: p.trace_tier,
      created_at: p.created_at.toISOString(),
      modified_at: p.modified_at.toISOString(),
    };
  }
}
