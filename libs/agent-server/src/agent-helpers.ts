import type { AgentGraphSchemas, AgentRunStatus, AgentThreadState } from '@th/contracts';
import { ValidationFailed } from '@th/platform';
import type { z } from 'zod';
import type { DirectClaim, RunRow } from './agent.repository';
import type { StateSnapshotLike } from './graph-registry';
import { toWire } from './serialize';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const TERMINAL: ReadonlySet<AgentRunStatus> = new Set(['success', 'error', 'timeout', 'interrupted']);
export const isTerminal = (s: AgentRunStatus): boolean => TERMINAL.has(s);

/** A path id: a malformed one is a 422 on its location, like any other bad input. */
/** A state update the graph refused (bad values, a node that cannot write them) as a 422 at `loc`; anything else as it is. */
export function asInvalidUpdate(err: unknown, loc: string[]): unknown {
  const e = err as Error;
  if (e?.name === 'InvalidUpdateError' || e?.name === 'ZodError' || e?.name === 'EmptyChannelError') {
    return new ValidationFailed([{ loc, msg: e.message, type: 'invalid_update' }]);
  }
  return err;
}

export function pathId(value: string, name: string): string {
  if (!UUID.test(value)) throw new ValidationFailed([{ loc: ['path', name], msg: 'Input should be a valid UUID', type: 'uuid_parsing' }]);
  return value.toLowerCase();
}

export interface StreamEvent {
  seq: number;
  event: string;
  data: string;
}

/** An event of a thread stream: its id names the run and the event's sequence number in it. */
export interface ThreadStreamEvent {
  id: string;
  event: string;
  data: string;
}

/** Where a thread stream resumes: after this event of this run (seq 0 is the run's metadata). */
export interface ThreadStreamCursor {
  run_id: string;
  seq: number;
}

export interface ZodLike {
  safeParse(v: unknown): { success: boolean; error?: z.ZodError };
  partial?: () => ZodLike;
}

/** This process's run executor (the RunWorker), which may take a run it creates at once. */
export interface RunExecutor {
  reserve(): DirectClaim | null;
  unreserve(): void;
  adopt(run: RunRow): void;
  running(runId: string): { threadId: string; ended: RunRow | null } | null;
}


export function emptyState(): AgentThreadState {
  return { values: {}, next: [], tasks: [], checkpoint: null, metadata: null, created_at: null, parent_checkpoint: null, interrupts: [] };
}

export function checkpointOf(c: { configurable?: Record<string, unknown> } | undefined): AgentThreadState['checkpoint'] {
  const cf = c?.configurable;
  if (!cf?.checkpoint_id) return null;
  return { thread_id: String(cf.thread_id), checkpoint_ns: String(cf.checkpoint_ns ?? ''), checkpoint_id: String(cf.checkpoint_id), checkpoint_map: cf.checkpoint_map ?? null };
}

export function toState(s: StateSnapshotLike): AgentThreadState {
  const tasks = (s.tasks ?? []).map((t) => ({
    id: t.id,
    name: t.name,
    error: t.error ? String((t.error as Error).message ?? t.error) : null,
    interrupts: toWire(t.interrupts ?? []),
    checkpoint: null,
    state: t.state ? toWire(t.state) : null,
    result: toWire(t.result) ?? null,
  }));
  return {
    values: toWire(s.values) ?? {},
    next: s.next ?? [],
    tasks,
    checkpoint: checkpointOf(s.config),
    metadata: toWire(s.metadata) ?? null,
    created_at: s.createdAt ?? null,
    parent_checkpoint: checkpointOf(s.parentConfig),
    interrupts: tasks.flatMap((t) => t.interrupts as unknown[]),
  };
}

let zodSchema: Record<string, ((g: unknown) => unknown) | undefined> | null | undefined;
/** LangGraph's JSON Schema export of zod-defined state (loaded once; absent in older releases). */
export function zodSchemaHelpers(): Record<string, ((g: unknown) => unknown) | undefined> | null {
  if (zodSchema === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      zodSchema = require('@langchain/langgraph/zod/schema') as Record<string, (g: unknown) => unknown>;
    } catch {
      zodSchema = null;
    }
  }
  return zodSchema;
}

export function schemasOf(graph: unknown): Omit<AgentGraphSchemas, 'graph_id'> {
  const h = zodSchemaHelpers();
  const one = (name: string): unknown => {
    try {
      return h?.[name]?.(graph) ?? null;
    } catch {
      return null;
    }
  };
  const config = one('getConfigTypeSchema');
  return { input_schema: one('getInputTypeSchema'), output_schema: one('getOutputTypeSchema'), state_schema: one('getStateTypeSchema'), config_schema: config, context_schema: config };
}

/**
 * The published client's createBatch sends each payload as given (camelCase keys, plus assistant_id):
 * top-level keys become snake_case and the duplicate assistantId is dropped.
 */
export function snakeKeys(item: unknown): unknown {
  if (!item || typeof item !== 'object' || Array.isArray(item)) return item;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item as Record<string, unknown>)) {
    if (k === 'assistantId' && 'assistant_id' in (item as Record<string, unknown>)) continue;
    out[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v;
  }
  return out;
}
