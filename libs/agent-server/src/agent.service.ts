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
 * Assistants, threads and runs: the agent server's use cases, one service per seam, built together because runs
 * need the other two; the controllers inject this (AGENT_SERVICE) and call the seam they serve.
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
}
