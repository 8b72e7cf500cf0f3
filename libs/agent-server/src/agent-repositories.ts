import type { Pool } from 'pg';
import { AssistantsRepository } from './assistants.repository';
import { RunQueueRepository } from './run-queue.repository';
import { RunsRepository } from './runs.repository';
import { ThreadsRepository } from './threads.repository';

/** The agent server's repositories, one per seam, over one pool: the only code that speaks SQL for them. */
export interface AgentRepositories {
  assistants: AssistantsRepository;
  threads: ThreadsRepository;
  runs: RunsRepository;
  queue: RunQueueRepository;
}

export function agentRepositories(pool: Pool): AgentRepositories {
  return { assistants: new AssistantsRepository(pool), threads: new ThreadsRepository(pool), runs: new RunsRepository(pool), queue: new RunQueueRepository(pool) };
}
