import { readFileSync } from 'node:fs';
import Module from 'node:module';
import { dirname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createHash } from 'node:crypto';
import { agentGraphsConfigFileSchema } from '@th/contracts';
import { parseOrThrow } from '@th/platform';

/** The namespace the published client and the reference server derive default assistant ids from. */
export const ASSISTANT_NAMESPACE = '6ba7b821-9dad-11d1-80b4-00c04fd430c8';
export const defaultAssistantId = (graphId: string): string => uuidv5(graphId, ASSISTANT_NAMESPACE);

/** RFC 4122 name-based UUID (version 5, SHA-1). */
export function uuidv5(name: string, namespace: string): string {
  const hash = createHash('sha1').update(Buffer.from(namespace.replace(/-/g, ''), 'hex')).update(name, 'utf8').digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const h = hash.subarray(0, 16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The parts of a compiled LangGraph graph the server uses (kept structural: graphs may come from another copy of the package). */
export interface CompiledGraphLike {
  checkpointer?: unknown;
  stream(input: unknown, options: Record<string, unknown>): Promise<AsyncIterable<unknown>>;
  getState(config: Record<string, unknown>, options?: Record<string, unknown>): Promise<StateSnapshotLike>;
  getStateHistory(config: Record<string, unknown>, options?: Record<string, unknown>): AsyncIterable<StateSnapshotLike>;
  builder?: { _inputDefinition?: unknown; _inputRuntimeDefinition?: unknown };
  nodes?: Record<string, unknown>;
  updateState(config: Record<string, unknown>, values: unknown, asNode?: string): Promise<{ configurable?: Record<string, unknown> }>;
  getGraphAsync(config: Record<string, unknown>): Promise<{ toJSON(): unknown }>;
  getSubgraphsAsync?(namespace?: string, recurse?: boolean): AsyncIterable<[string, unknown]>;
}

export interface StateSnapshotLike {
  values: unknown;
  next: string[];
  tasks: { id: string; name: string; error?: unknown; interrupts?: unknown[]; state?: unknown; result?: unknown }[];
  config: { configurable?: Record<string, unknown> };
  metadata?: unknown;
  createdAt?: string;
  parentConfig?: { configurable?: Record<string, unknown> };
}

export interface LoadedGraph {
  graphId: string;
  assistantId: string;
  graph: CompiledGraphLike;
}

let resolverInstalled = false;

/**
 * Lets a graph module loaded from a deployment's unpacked source (outside the repository) require
 * '@langchain/langgraph' and its siblings: a bare specifier that does not resolve from the module's own
 * folder is resolved from the server's node_modules.
 */
export function installFallbackResolver(): void {
  if (resolverInstalled) return;
  resolverInstalled = true;
  const mod = Module as unknown as { _resolveFilename: (request: string, parent: unknown, ...rest: unknown[]) => string };
  const original = mod._resolveFilename;
  const ownPaths = [__dirname];
  mod._resolveFilename = function (request: string, parent: unknown, ...rest: unknown[]): string {
    try {
      return original.call(this, request, parent, ...rest);
    } catch (err) {
      if ((err as { code?: string }).code !== 'MODULE_NOT_FOUND' || request.startsWith('.') || isAbsolute(request)) throw err;
      return original.call(this, request, parent, false, { paths: ownPaths });
    }
  };
}

function isGraph(value: unknown): value is CompiledGraphLike {
  return !!value && typeof (value as CompiledGraphLike).stream === 'function' && typeof (value as CompiledGraphLike).getState === 'function';
}

async function loadModule(file: string): Promise<Record<string, unknown>> {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(file) as Record<string, unknown>;
  } catch (err) {
    if ((err as { code?: string }).code !== 'ERR_REQUIRE_ESM') throw err;
    // An ES module: a real dynamic import (kept out of reach of the CommonJS transpilation).
    const importer = new Function('s', 'return import(s)') as (s: string) => Promise<Record<string, unknown>>;
    return importer(pathToFileURL(file).href);
  }
}

/** Loads every graph named in the graph configuration file, checkpointed by `checkpointer`. */
export async function loadGraphs(configPath: string, checkpointer: unknown): Promise<Map<string, LoadedGraph>> {
  installFallbackResolver();
  const file = resolve(configPath);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read the graph configuration ${file}: ${(err as Error).message}`, { cause: err });
  }
  const parsed = parseOrThrow(agentGraphsConfigFileSchema, raw, [file]);
  const graphs = new Map<string, LoadedGraph>();
  for (const [graphId, spec] of Object.entries(parsed.graphs)) {
    const [modulePath, exportName = 'default'] = spec.split(':');
    const module = await loadModule(resolve(dirname(file), modulePath));
    let exported: unknown = module[exportName] ?? (exportName === 'default' ? module : undefined);
    if (typeof exported === 'function' && !isGraph(exported)) exported = await (exported as (c: unknown) => unknown)({});
    if (!isGraph(exported)) throw new Error(`graph "${graphId}": ${spec} does not export a compiled graph or a function returning one`);
    exported.checkpointer = checkpointer;
    graphs.set(graphId, { graphId, assistantId: defaultAssistantId(graphId), graph: exported });
  }
  return graphs;
}
