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
} from '@th/contracts';
import { badRequest, notFound } from '@th/platform';
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
  ) {}

  async compare(identity: Identity, datasetId: string, req: ExperimentCompareRequest): Promise<ExperimentCompareResponse> {
    await this.datasets.get(identity, datasetId);
    const sessionIds = [...new Set(req.session_ids)];
    const experiments = await this.projects.experiments(identity, sessionIds);
    const found = new Set(experiments.map((e) => e.id));
    const missing = sessionIds.filter((id) => !found.has(id));
    if (missing.length > 0) throw notFound(`Experiment ${missing.join(', ')}`);
    const foreign = experiments.filter((e) => e.reference_dataset_id !== datasetId);
    if (foreign.length > 0) throw badRequest(`Experiment ${foreign.map((e) => e.id).join(', ')} is not an experiment on dataset ${datasetId}`);
    return { experiments, examples: await this.examplesWithRuns(identity, datasetId, sessionIds, req) };
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

  private async runsOf(identity: Identity, sessionIds: string[], exampleIds: string[]): Promise<Partial<RunRecord>[]> {
    const out: Partial<RunRecord>[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const q = runQuerySchema.parse({ session: sessionIds, reference_example: exampleIds, is_root: true, limit: PAGE, order: 'asc', cursor });
      const res = await this.runs.query(identity, q);
      out.push(...res.runs);
      cursor = res.cursors.next;
      if (!cursor) break;
    }
    return out;
  }

  private async feedbackOf(identity: Identity, runIds: string[]): Promise<Map<string, Feedback[]>> {
    const out = new Map<string, Feedback[]>();
    for (let i = 0; i < runIds.length; i += PAGE) {
      const run = runIds.slice(i, i + PAGE);
      for (let page = 0; page < MAX_PAGES; page++) {
        const rows = await this.feedback.list(identity, feedbackListQuerySchema.parse({ run, offset: page * PAGE, limit: PAGE }));
        for (const f of rows) out.set(String(f.run_id), [...(out.get(String(f.run_id)) ?? []), f]);
        if (rows.length < PAGE) break;
      }
    }
    return out;
  }
}
