import type { Type } from '@nestjs/common';
import type {
  Experiment,
  Feedback,
  FeedbackListQuery,
  FeedbackStats,
  Identity,
  Project,
  ProjectCreate,
  ProjectListQuery,
  RunQuery,
  RunRecord,
} from '@th/contracts';

/**
 * What experiments need from the tracing side, as ports: a domain lib does not import another one,
 * so the host binds these to the query module's ProjectsService and RunsService and the feedback
 * module's FeedbackQueryService (ExperimentsModule.forRoot).
 */
export interface ExperimentProjectsPort {
  list(identity: Identity, q: ProjectListQuery): Promise<Project[]>;
  createExperiment(identity: Identity, body: ProjectCreate): Promise<Experiment>;
  discardExperiment(identity: Identity, id: string): Promise<void>;
  experiments(identity: Identity, ids: string[]): Promise<Experiment[]>;
}

export interface ExperimentRunsPort {
  query(identity: Identity, q: RunQuery): Promise<{ runs: Partial<RunRecord>[]; cursors: { next: string | null } }>;
}

export interface ExperimentFeedbackPort {
  list(identity: Identity, q: FeedbackListQuery): Promise<Feedback[]>;
  comparativeStats(identity: Identity, comparativeExperimentIds: string[]): Promise<Map<string, FeedbackStats>>;
}

export const EXPERIMENT_PROJECTS = Symbol('EXPERIMENT_PROJECTS');
export const EXPERIMENT_RUNS = Symbol('EXPERIMENT_RUNS');
export const EXPERIMENT_FEEDBACK = Symbol('EXPERIMENT_FEEDBACK');

export interface ExperimentPortTokens {
  projects: Type<ExperimentProjectsPort>;
  runs: Type<ExperimentRunsPort>;
  feedback: Type<ExperimentFeedbackPort>;
}
