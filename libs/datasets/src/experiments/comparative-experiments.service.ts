import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { ComparativeExperiment, ComparativeExperimentCreate, ComparativeExperimentListQuery, FeedbackStats, Identity } from '@th/contracts';
import { AuditPublisher } from '@th/audit-client';
import { badRequest, conflict, notFound } from '@th/platform';
import { DatasetsService } from '../datasets.service';
import { EXPERIMENT_FEEDBACK, EXPERIMENT_PROJECTS, type ExperimentFeedbackPort, type ExperimentProjectsPort } from './experiment-ports';
import { ComparativeExperimentsRepository, type ComparativeExperimentRow } from './comparative-experiments.repository';

/** Comparative (pairwise) experiments: two or more experiments of one dataset, scored against each other by feedback. */
@Injectable()
export class ComparativeExperimentsService {
  constructor(
    private readonly repo: ComparativeExperimentsRepository,
    private readonly datasets: DatasetsService,
    @Inject(EXPERIMENT_PROJECTS) private readonly projects: ExperimentProjectsPort,
    @Inject(EXPERIMENT_FEEDBACK) private readonly feedback: ExperimentFeedbackPort,
    private readonly audit: AuditPublisher,
  ) {}

  /** Tracked: Success names the new comparative experiment and its dataset. */
  create(identity: Identity, body: ComparativeExperimentCreate): Promise<ComparativeExperiment> {
    return this.audit.track({ identity, resources: [{ type: 'dataset', id: body.reference_dataset_id }] }, () => this.applyCreate(identity, body), (c) => [
      { type: 'dataset', id: body.reference_dataset_id },
      { type: 'comparative_experiment', id: c.id },
    ]);
  }

  private async applyCreate(identity: Identity, body: ComparativeExperimentCreate): Promise<ComparativeExperiment> {
    await this.datasets.get(identity, body.reference_dataset_id);
    const experiments = await this.projects.experiments(identity, body.experiment_ids);
    // Another workspace's experiment is as unknown as a free id.
    const missing = body.experiment_ids.filter((id) => !experiments.some((e) => e.id === id));
    if (missing.length > 0) throw notFound(`Experiment ${missing[0]}`);
    const foreign = experiments.filter((e) => e.reference_dataset_id !== body.reference_dataset_id);
    if (foreign.length > 0) throw badRequest(`Experiment ${foreign[0].id} is not an experiment on dataset ${body.reference_dataset_id}`);
    const created = body.created_at ? new Date(body.created_at) : new Date();
    const row: ComparativeExperimentRow = {
      tenant_id: identity.tenant_id,
      id: body.id ?? randomUUID(),
      name: body.name ?? null,
      description: body.description ?? null,
      reference_dataset_id: body.reference_dataset_id,
      experiment_ids: body.experiment_ids,
      extra: body.extra ?? null,
      created_at: created,
      modified_at: body.modified_at ? new Date(body.modified_at) : created,
    };
    if (!(await this.repo.insert(row))) throw conflict(`Comparative experiment ${row.id} already exists`);
    return present(row, new Map(experiments.map((e) => [e.id, e.name])), null);
  }

  async listForDataset(identity: Identity, datasetId: string, q: ComparativeExperimentListQuery): Promise<ComparativeExperiment[]> {
    await this.datasets.get(identity, datasetId);
    const rows = await this.repo.listByDataset(identity.tenant_id, datasetId, q);
    const ids = [...new Set(rows.flatMap((r) => r.experiment_ids))];
    const names = new Map((ids.length ? await this.projects.experiments(identity, ids) : []).map((e) => [e.id, e.name]));
    const stats = rows.length ? await this.feedback.comparativeStats(identity, rows.map((r) => r.id)) : new Map<string, FeedbackStats>();
    return rows.map((r) => present(r, names, stats.get(r.id) ?? null));
  }

  /** Recorded by the route's interceptor, naming the comparative experiment of the path. */
  async delete(identity: Identity, id: string): Promise<void> {
    if (!(await this.repo.delete(identity.tenant_id, id))) throw notFound(`Comparative experiment ${id}`);
  }
}

/** experiments_info lists the experiments that still exist, in the order they were given; feedback_stats is null without pairwise feedback. */
function present(r: ComparativeExperimentRow, names: Map<string, string>, feedbackStats: FeedbackStats | null): ComparativeExperiment {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    tenant_id: r.tenant_id,
    created_at: r.created_at.toISOString(),
    modified_at: r.modified_at.toISOString(),
    reference_dataset_id: r.reference_dataset_id,
    extra: r.extra,
    experiments_info: r.experiment_ids.flatMap((id) => (names.has(id) ? [{ id, name: names.get(id) as string }] : [])),
    feedback_stats: feedbackStats,
  };
}
