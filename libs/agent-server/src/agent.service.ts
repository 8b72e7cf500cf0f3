import type { OutboundPolicy } from '@th/platform';
import type { AgentRepositories } from './agent-repositories';
import { AssistantsService } from './assistants.service';
import type { LoadedGraph } from './graph-registry';
import type { Notifier } from './notifier';
import { RunsService } from './runs.service';
import { ThreadsService } from './threads.service';
import type { RunExecutor } from './agent-helpers';
import type { RunEndListener } from './webhook';

export { isTerminal, pathId, type RunExecutor, type StreamEvent, type ThreadStreamCursor, type ThreadStreamEvent } from './agent-helpers';

/**
 * Assistants, threads and runs: the agent server's use cases, one service per seam; this is the one the
 * controllers inject (AGENT_SERVICE), each method its seam's.
 */
export class AgentService {
  readonly assistants: AssistantsService;
  readonly threads: ThreadsService;
  readonly runs: RunsService;

  constructor(
    repo: AgentRepositories,
    notifier: Notifier,
    graphs: Map<string, LoadedGraph>,
    executor: RunExecutor | null = null,
    /** Told of the runs this service ends itself (pending runs interrupted), once committed. */
    ended: RunEndListener | null = null,
    /** Where run webhooks may point (public addresses, or what the operator's allow-list names). */
    outbound: OutboundPolicy,
  ) {
    this.assistants = new AssistantsService(repo, graphs);
    this.threads = new ThreadsService(repo, graphs);
    this.runs = new RunsService(repo, notifier, graphs, this.assistants, this.threads, executor, ended, outbound);
  }

  static finalBody = RunsService.finalBody;
  static endEvent = RunsService.endEvent;

  // assistants

  resolveAssistant(...a: Parameters<AssistantsService['resolveAssistant']>) {
    return this.assistants.resolveAssistant(...a);
  }

  createAssistant(...a: Parameters<AssistantsService['createAssistant']>) {
    return this.assistants.createAssistant(...a);
  }

  searchAssistants(...a: Parameters<AssistantsService['searchAssistants']>) {
    return this.assistants.searchAssistants(...a);
  }

  countAssistants(...a: Parameters<AssistantsService['countAssistants']>) {
    return this.assistants.countAssistants(...a);
  }

  updateAssistant(...a: Parameters<AssistantsService['updateAssistant']>) {
    return this.assistants.updateAssistant(...a);
  }

  assistantVersions(...a: Parameters<AssistantsService['assistantVersions']>) {
    return this.assistants.assistantVersions(...a);
  }

  setLatestVersion(...a: Parameters<AssistantsService['setLatestVersion']>) {
    return this.assistants.setLatestVersion(...a);
  }

  assistantGraphJson(...a: Parameters<AssistantsService['assistantGraphJson']>) {
    return this.assistants.assistantGraphJson(...a);
  }

  assistantSchemas(...a: Parameters<AssistantsService['assistantSchemas']>) {
    return this.assistants.assistantSchemas(...a);
  }

  assistantSubgraphs(...a: Parameters<AssistantsService['assistantSubgraphs']>) {
    return this.assistants.assistantSubgraphs(...a);
  }

  deleteAssistant(...a: Parameters<AssistantsService['deleteAssistant']>) {
    return this.assistants.deleteAssistant(...a);
  }

  // threads

  createThread(...a: Parameters<ThreadsService['createThread']>) {
    return this.threads.createThread(...a);
  }

  getThread(...a: Parameters<ThreadsService['getThread']>) {
    return this.threads.getThread(...a);
  }

  patchThread(...a: Parameters<ThreadsService['patchThread']>) {
    return this.threads.patchThread(...a);
  }

  countThreads(...a: Parameters<ThreadsService['countThreads']>) {
    return this.threads.countThreads(...a);
  }

  searchThreads(...a: Parameters<ThreadsService['searchThreads']>) {
    return this.threads.searchThreads(...a);
  }

  copyThread(...a: Parameters<ThreadsService['copyThread']>) {
    return this.threads.copyThread(...a);
  }

  deleteThread(...a: Parameters<ThreadsService['deleteThread']>) {
    return this.threads.deleteThread(...a);
  }

  sweepExpiredThreads(...a: Parameters<ThreadsService['sweepExpiredThreads']>) {
    return this.threads.sweepExpiredThreads(...a);
  }

  getState(...a: Parameters<ThreadsService['getState']>) {
    return this.threads.getState(...a);
  }

  getStateAt(...a: Parameters<ThreadsService['getStateAt']>) {
    return this.threads.getStateAt(...a);
  }

  getStateAtCheckpoint(...a: Parameters<ThreadsService['getStateAtCheckpoint']>) {
    return this.threads.getStateAtCheckpoint(...a);
  }

  updateState(...a: Parameters<ThreadsService['updateState']>) {
    return this.threads.updateState(...a);
  }

  patchState(...a: Parameters<ThreadsService['patchState']>) {
    return this.threads.patchState(...a);
  }

  getHistory(...a: Parameters<ThreadsService['getHistory']>) {
    return this.threads.getHistory(...a);
  }

  // runs

  createRun(...a: Parameters<RunsService['createRun']>) {
    return this.runs.createRun(...a);
  }

  checkRunBody(...a: Parameters<RunsService['checkRunBody']>) {
    return this.runs.checkRunBody(...a);
  }

  createBatch(...a: Parameters<RunsService['createBatch']>) {
    return this.runs.createBatch(...a);
  }

  getRun(...a: Parameters<RunsService['getRun']>) {
    return this.runs.getRun(...a);
  }

  listRuns(...a: Parameters<RunsService['listRuns']>) {
    return this.runs.listRuns(...a);
  }

  cancelRun(...a: Parameters<RunsService['cancelRun']>) {
    return this.runs.cancelRun(...a);
  }

  deleteRun(...a: Parameters<RunsService['deleteRun']>) {
    return this.runs.deleteRun(...a);
  }

  waitForEnd(...a: Parameters<RunsService['waitForEnd']>) {
    return this.runs.waitForEnd(...a);
  }

  join(...a: Parameters<RunsService['join']>) {
    return this.runs.join(...a);
  }

  requireRun(...a: Parameters<RunsService['requireRun']>) {
    return this.runs.requireRun(...a);
  }

  events(...a: Parameters<RunsService['events']>) {
    return this.runs.events(...a);
  }

  openThreadStream(...a: Parameters<RunsService['openThreadStream']>) {
    return this.runs.openThreadStream(...a);
  }

  threadEvents(...a: Parameters<RunsService['threadEvents']>) {
    return this.runs.threadEvents(...a);
  }

  dropTemporaryThread(...a: Parameters<RunsService['dropTemporaryThread']>) {
    return this.runs.dropTemporaryThread(...a);
  }

  cancelQuietly(...a: Parameters<RunsService['cancelQuietly']>) {
    return this.runs.cancelQuietly(...a);
  }
}
