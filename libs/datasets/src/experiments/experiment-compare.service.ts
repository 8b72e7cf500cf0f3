import { Inject, Injectable } from '@nestjs/common';
import {
  exampleListQuerySchema,
  feedbackListQuerySchema,
  runQuerySchema,
  type ExampleWithRuns,
  type ExperimentCompareRequest,
  type ExperimentCompareResponse,
  type Feedback,
  type Identity,
  type RunRecord,
  type V2ExperimentRunQuery,
  type ValidationErrorItem,
  rollupFeedbackStats,
} from '@th/contracts';
import { badRequest, notFound, ValidationFailed } from '@th/platform';
import { FilterSyntaxError, parseFilter } from '@th/run-filter';
import { ComparativeExperimentsRepository } from './comparative-experiments.repository';
import { DatasetsService } from '../datasets.service';
import { ExamplesService } from '../examples.service';
import {
  EXPERIMENT_FEEDBACK,
  EXPERIMENT_PROJECTS,
  EXPERIMENT_RUNS,
  type ExperimentFeedbackPort,
  type ExperimentProjectsPort,
  type ExperimentRunsPort,
} from './experiment-ports';

/** Bounds on the reads behind one comparison page (examples × experiments ≤ 50,000 runs). */
const MAX_PAGES = 100;
const PAGE = 1000;

/**
 * Experiments side by side on one dataset: a page of the dataset's examples, each with the runs
 * of the chosen experiments on it (root runs, with their feedback), and the experiments with
 * their aggregates over the whole dataset.
 */
@Injectable()
export class ExperimentCompareService {
  constructor(
    private readonly datasets: DatasetsService,
    private readonly examples: ExamplesService,
    @Inject(EXPERIMENT_PROJECTS) private readonly projects: ExperimentProjectsPort,
    @Inject(EXPERIMENT_RUNS) private readonly runs: ExperimentRunsPort,
    @Inject(EXPERIMENT_FEEDBACK) private readonly feedback: ExperimentFeedbackPort,
    private readonly comparatives: ComparativeExperimentsRepository,
  ) {}

  async compare(identity: Identity, datasetId: string, req: ExperimentCompareRequest): Promise<ExperimentCompareResponse> {
    const sessionIds = [...new Set(req.session_ids)];
    const experiments = await this.checkExperiments(identity, datasetId, sessionIds);
    return { experiments, examples: await this.examplesWithRuns(identity, datasetId, sessionIds, req) };
  }

  /**
   * The v2 experiment-runs page: examples of the dataset (only those whose run in each filtered experiment matches
   * its filters; ordered by a feedback key's mean score when sorted), each with the experiments' root runs.
   */
  async experimentRuns(identity: Identity, datasetId: string, q: V2ExperimentRunQuery, offset: number, limit: number): Promise<ExampleWithRuns[]> {
    const sessionIds = [...new Set(q.experiment_ids)];
    checkFilterSyntax(q.filters ?? {});
    await this.checkExperiments(identity, datasetId, sessionIds);
    if (q.comparative_experiment_id !== undefined) {
      const comparative = await this.comparatives.findById(identity.tenant_id, q.comparative_experiment_id);
      if (!comparative || comparative.reference_dataset_id !== datasetId) throw notFound(`Comparative experiment ${q.comparative_experiment_id}`);
    }
    let examples: ExampleWithRuns[];
    if (!q.filters && !q.sort) {
      examples = await this.examplesWithRuns(identity, datasetId, sessionIds, { session_ids: sessionIds, example_ids: q.example_ids, offset, limit });
    } else {
      let allowed: string[] | undefined = q.example_ids;
      for (const [sessionId, exprs] of Object.entries(q.filters ?? {})) {
        const filter = exprs.length === 1 ? exprs[0] : `and(${exprs.join(', ')})`;
        const matched = new Set((await this.runsOf(identity, [sessionId], allowed, filter)).map((r) => String(r.reference_example_id)));
        allowed = allowed === undefined ? [...matched] : allowed.filter((id) => matched.has(id));
      }
      if (allowed !== undefined && allowed.length === 0) return [];
      if (!q.sort) {
        examples = await this.examplesWithRuns(identity, datasetId, sessionIds, { session_ids: sessionIds, example_ids: allowed, offset, limit });
      } else {
        const ordered = (await this.orderByScore(identity, sessionIds[0], allowed, q.sort.by, q.sort.order)).slice(offset, offset + limit);
        if (ordered.length === 0) return [];
        const rank = new Map(ordered.map((id, i) => [id, i]));
        examples = (await this.examplesWithRuns(identity, datasetId, sessionIds, { session_ids: sessionIds, example_ids: ordered, offset: 0, limit: ordered.length })).sort(
          (a, b) => (rank.get(a.id) ?? 0) - (rank.get(b.id) ?? 0),
        );
      }
    }
    const comparativeId = q.comparative_experiment_id;
    if (comparativeId === undefined) return examples;
    return examples.map((e) => ({
      ...e,
      runs: e.runs.map((r) => ({ ...r, feedback_stats: pairwiseStats(((r as { feedback?: Feedback[] }).feedback ?? []).filter((f) => f.comparative_experiment_id === comparativeId)) })),
    }));
  }

  /**
   * The examples the experiment ran on, by the mean score of their root runs' feedback of one key; runs without
   * such a score come last (as LangSmith orders nulls), ties by example id.
   */
  private async orderByScore(identity: Identity, sessionId: string, exampleIds: string[] | undefined, key: string, order: 'ASC' | 'DESC'): Promise<string[]> {
    const runs = await this.runsOf(identity, [sessionId], exampleIds);
    const feedback = await this.feedbackOf(identity, runs.map((r) => String(r.id)), key);
    const scores = new Map<string, number[]>();
    for (const r of runs) {
      const list = scores.get(String(r.reference_example_id)) ?? [];
      for (const f of feedback.get(String(r.id)) ?? []) if (f.score !== null) list.push(f.score);
      scores.set(String(r.reference_example_id), list);
    }
    const mean = (xs: number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);
    const sign = order === 'ASC' ? 1 : -1;
    return [...scores]
      .map(([id, xs]) => ({ id, score: mean(xs) }))
      .sort((a, b) => {
        if (a.score === null || b.score === null) return a.score === b.score ? a.id.localeCompare(b.id) : a.score === null ? 1 : -1;
        return sign * (a.score - b.score) || a.id.localeCompare(b.id);
      })
      .map((s) => s.id);
  }

  private async checkExperiments(identity: Identity, datasetId: string, sessionIds: string[]) {
    await this.datasets.get(identity, datasetId);
    const experiments = await this.projects.experiments(identity, sessionIds);
    const found = new Set(experiments.map((e) => e.id));
    const missing = sessionIds.filter((id) => !found.has(id));
    if (missing.length > 0) throw notFound(`Experiment ${missing.join(', ')}`);
    const foreign = experiments.filter((e) => e.reference_dataset_id !== datasetId);
    if (foreign.length > 0) throw badRequest(`Experiment ${foreign.map((e) => e.id).join(', ')} is not an experiment on dataset ${datasetId}`);
    return experiments;
  }

  /** LangSmith's POST /datasets/{id}/runs: the examples with the chosen experiments' runs. */
  async examplesWithRuns(identity: Identity, datasetId: string, sessionIds: string[], req: ExperimentCompareRequest): Promise<ExampleWithRuns[]> {
    const examples = await this.examples.list(
      identity,
      exampleListQuerySchema.parse({ dataset: datasetId, id: req.example_ids ?? undefined, offset: req.offset, limit: req.limit, order: 'oldest' }),
    );
    if (examples.length === 0) return [];
    const runs = await this.runsOf(identity, sessionIds, examples.map((e) => e.id));
    const feedback = await this.feedbackOf(identity, runs.map((r) => String(r.id)));
    const bySession = new Map(sessionIds.map((id, i) => [id, i]));
    const byExample = new Map<string, Record<string, unknown>[]>();
    for (const r of runs) {
      const list = byExample.get(String(r.reference_example_id)) ?? [];
      list.push({ ...r, feedback: feedback.get(String(r.id)) ?? [] });
      byExample.set(String(r.reference_example_id), list);
    }
    return examples.map((e) => ({
      ...e,
      runs: (byExample.get(e.id) ?? []).sort(
        (a, b) => (bySession.get(String(a.session_id)) ?? 0) - (bySession.get(String(b.session_id)) ?? 0) || String(a.start_time).localeCompare(String(b.start_time)),
      ) as ExampleWithRuns['runs'],
    }));
  }

  private async runsOf(identity: Identity, sessionIds: string[], exampleIds: string[] | undefined, filter?: string): Promise<Partial<RunRecord>[]> {
    const out: Partial<RunRecord>[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const q = runQuerySchema.parse({ session: sessionIds, reference_example: exampleIds, is_root: true, filter, limit: PAGE, order: 'asc', cursor });
      const res = await this.runs.query(identity, q);
      out.push(...res.runs);
      cursor = res.cursors.next;
      if (!cursor) break;
    }
    return out;
  }

  private async feedbackOf(identity: Identity, runIds: string[], key?: string): Promise<Map<string, Feedback[]>> {
    const out = new Map<string, Feedback[]>();
    for (let i = 0; i < runIds.length; i += PAGE) {
      const run = runIds.slice(i, i + PAGE);
      for (let page = 0; page < MAX_PAGES; page++) {
        const rows = await this.feedback.list(identity, feedbackListQuerySchema.parse({ run, key: key === undefined ? undefined : [key], offset: page * PAGE, limit: PAGE }));
        for (const f of rows) out.set(String(f.run_id), [...(out.get(String(f.run_id)) ?? []), f]);
        if (rows.length < PAGE) break;
      }
    }
    return out;
  }
}

/** Each filter expression must parse; refused at its place in the body, not run. */
function checkFilterSyntax(filters: Record<string, string[]>): void {
  const problems: ValidationErrorItem[] = [];
  for (const [sessionId, exprs] of Object.entries(filters)) {
    exprs.forEach((expr, i) => {
      try {
        parseFilter(expr);
      } catch (e) {
        if (!(e instanceof FilterSyntaxError)) throw e;
        problems.push({ loc: ['body', 'filters', sessionId, i], msg: e.message, type: 'value_error' });
      }
    });
  }
  if (problems.length > 0) throw new ValidationFailed(problems);
}

/** feedback_stats over pairwise feedback rows (null when there is none), with the rollup the stored stats use. */
function pairwiseStats(feedback: Feedback[]) {
  return rollupFeedbackStats(
    feedback.map((f) => ({
      key: f.key,
      value: f.value === null ? '' : typeof f.value === 'string' ? f.value : JSON.stringify(f.value),
      n: 1,
      scored: f.score === null ? 0 : 1,
      sum: f.score,
      sum_sq: f.score === null ? null : f.score * f.score,
    })),
  );
}
