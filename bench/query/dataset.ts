/**
 * Synthetic traces for the query benchmark, turned into stored rows by the writer's own row
 * builder (emptyRun + mergeEvent(post) + mergeEvent(patch) + runRow), so every row is exactly
 * what ingest would store for a completed run.
 *
 * Shape: traces of one root and ~4 children (some nested under a child chain), UUIDv7-like ids
 * from the run's start time, start times spread evenly over the window in trace order (as a live
 * system receives them), a run_type mix, ~10% failing traces, inherited tags and metadata, small
 * inputs/outputs, token usage on llm runs, and a skewed spread over the projects.
 * Everything derives from one seed, so the same arguments give the same data set.
 */
import { microsToIso, type RunEvent } from '@th/contracts';
import { computeRun, dottedSegment, emptyRun, mergeEvent, runRow } from '@th/ingest';

/** mulberry32: small, fast, seedable. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 0x9e3779b9;
  }
  u32(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  float(): number {
    return this.u32() / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.float() * n);
  }
  range(lo: number, hi: number): number {
    return lo + this.float() * (hi - lo);
  }
  pick<T>(a: readonly T[]): T {
    return a[this.int(a.length)];
  }
  /** Index drawn from cumulative weights (last entry = total). */
  weighted(cum: readonly number[]): number {
    const x = this.float() * cum[cum.length - 1];
    let i = 0;
    while (i < cum.length - 1 && x >= cum[i]) i++;
    return i;
  }
}

const cumulative = (w: readonly number[]): number[] => {
  let s = 0;
  return w.map((v) => (s += v));
};

/** UUIDv7 layout: 48-bit Unix ms, version 7, 12 random bits, variant 10, 62 random bits. */
export function uuidv7(ms: number, rng: Rng): string {
  const t = Math.floor(ms).toString(16).padStart(12, '0');
  const a = rng.u32();
  const b = rng.u32();
  const c = rng.u32();
  const randA = (a & 0xfff).toString(16).padStart(3, '0');
  const varB = (0x8000 | ((a >>> 12) & 0x3fff)).toString(16);
  const tail = b.toString(16).padStart(8, '0') + (c & 0xffff).toString(16).padStart(4, '0');
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${randA}-${varB}-${tail}`;
}

/**
 * Project weights: project 0 holds `bigShare` of the traces, the rest share the remainder by a
 * Zipf law (1/k), so there are mid-size and small projects too.
 */
export function projectWeights(count: number, bigShare = 0.4): number[] {
  if (count === 1) return [1];
  const rest = Array.from({ length: count - 1 }, (_, k) => 1 / (k + 1));
  const h = rest.reduce((s, v) => s + v, 0);
  return [bigShare, ...rest.map((v) => ((1 - bigShare) * v) / h)];
}

const WORDS = (
  'the a of to and in is for on with as by at from that this it be are was model agent tool call ' +
  'answer question user context document search result query retrieve summary report customer order ' +
  'invoice refund shipping account password reset billing plan upgrade error timeout retry latency ' +
  'token prompt completion chain step plan observation thought action input output value table row ' +
  'column join filter sort group count price product review rating delivery address email phone ' +
  'support ticket issue status update weather city forecast temperature news article source link'
).split(' ');

/** One large pool of words; text fields are slices of it (cheap, and compress like prose). */
function wordPool(rng: Rng, chars: number): string {
  const out: string[] = [];
  let n = 0;
  while (n < chars) {
    const w = rng.pick(WORDS);
    out.push(w);
    n += w.length + 1;
  }
  return out.join(' ');
}

const ROOT_NAMES = ['AgentExecutor', 'RAGPipeline', 'SupportBot', 'SQLAgent', 'Summarizer', 'Router', 'ResearchAgent', 'Classifier'];
const ROOT_NAME_CUM = cumulative(ROOT_NAMES.map((_, k) => 1 / (k + 1)));
const CHILD_NAMES: Record<string, readonly string[]> = {
  llm: ['ChatOpenAI', 'ChatAnthropic'],
  tool: ['web_search', 'calculator', 'sql_query', 'fetch_url'],
  retriever: ['VectorStoreRetriever'],
  chain: ['RunnableSequence', 'PromptTemplate', 'StrOutputParser'],
};
const CHILD_TYPES = ['llm', 'tool', 'retriever', 'chain'] as const;
const CHILD_TYPE_CUM = cumulative([0.5, 0.25, 0.1, 0.15]);
const ROOT_TYPE_CUM = cumulative([0.85, 0.1, 0.05]); // chain (with children), llm, tool (single-run traces)
const ROOT_TYPES = ['chain', 'llm', 'tool'] as const;
const ENVS = ['prod', 'staging', 'dev'];
const ENV_CUM = cumulative([0.7, 0.2, 0.1]);
const MODELS = ['gpt-4o-mini', 'gpt-4o', 'claude-3-5-sonnet', 'claude-3-haiku'];
const ERRORS = [
  'RateLimitError: Error code: 429 - Rate limit reached for requests',
  'ToolException: request timed out after 30s',
  'ValueError: could not parse model output as JSON',
  'OutputParserException: missing required key "answer"',
  'APIConnectionError: Connection error.',
];

/** The tag a filter benchmark looks for: on ~5% of traces (children inherit tags). */
export const RARE_TAG = 'beta';

interface Node {
  id: string;
  type: string;
  name: string;
  parent: Node | null;
  children: Node[];
  depth: number;
  startUs: number;
  endUs: number;
  dotted: string;
  error: string | null;
}

export interface DatasetSpec {
  tenantId: string;
  projectIds: string[];
  weights: number[];
  runs: number;
  seed: number;
  windowStartMs: number;
  windowEndMs: number;
}

export interface SampleId {
  id: string;
  trace_id: string;
  project: number;
  root: boolean;
}

export interface DatasetStats {
  runs: number;
  traces: number;
  errors: number;
  rootErrors: number;
  perProject: number[];
  rootsPerProject: number[];
}

/**
 * Generates the data set trace by trace, in time order, as JSONEachRow chunks of about
 * `chunkRows` rows. Keeps a uniform sample of root and child ids for point reads.
 */
export class Dataset {
  readonly stats: DatasetStats;
  readonly sampleRoots: SampleId[] = [];
  readonly sampleChildren: SampleId[] = [];
  private readonly rng: Rng;
  private readonly sampler: Rng;
  private readonly pool: string;
  private readonly projectCum: number[];
  private produced = 0;
  private rootsSeen = 0;
  private childrenSeen = 0;
  private readonly usPerRun: number;

  constructor(
    private readonly spec: DatasetSpec,
    private readonly sampleSize = 4000,
  ) {
    this.rng = new Rng(spec.seed);
    this.sampler = new Rng(spec.seed ^ 0x5bd1e995);
    this.pool = wordPool(new Rng(spec.seed + 17), 1 << 20);
    this.projectCum = cumulative(spec.weights);
    this.usPerRun = ((spec.windowEndMs - spec.windowStartMs) * 1000) / spec.runs;
    const n = spec.projectIds.length;
    this.stats = { runs: 0, traces: 0, errors: 0, rootErrors: 0, perProject: new Array(n).fill(0), rootsPerProject: new Array(n).fill(0) };
  }

  get done(): boolean {
    return this.produced >= this.spec.runs;
  }

  /** The next chunk of rows as one JSONCompactEachRow body (RUN_ROW_COLUMNS), or null when all runs were produced. */
  nextChunk(chunkRows: number): { body: Buffer; rows: number } | null {
    if (this.done) return null;
    const lines: string[] = [];
    while (lines.length < chunkRows && !this.done) this.trace(lines);
    return { body: Buffer.from(lines.join('\n')), rows: lines.length };
  }

  private text(min: number, max: number): string {
    const len = Math.floor(this.rng.range(min, max));
    const at = this.rng.int(this.pool.length - len - 1);
    return this.pool.slice(at, at + len);
  }

  private node(type: string, name: string, parent: Node | null): Node {
    return { id: '', type, name, parent, children: [], depth: parent ? parent.depth + 1 : 0, startUs: 0, endUs: 0, dotted: '', error: null };
  }

  /** Leaf durations in microseconds by run type. */
  private duration(type: string): number {
    const r = this.rng;
    switch (type) {
      case 'llm':
        return Math.round((300 + r.float() * r.float() * 6000) * 1000);
      case 'tool':
        return Math.round(r.range(5, 500) * 1000);
      case 'retriever':
        return Math.round(r.range(50, 800) * 1000);
      default:
        return Math.round(r.range(10, 200) * 1000);
    }
  }

  /** Start and end times, ids and dotted orders: children run one after another inside their parent. */
  private layout(n: Node, startUs: number): void {
    n.startUs = startUs;
    n.id = uuidv7(startUs / 1000, this.rng);
    n.dotted = (n.parent ? `${n.parent.dotted}.` : '') + dottedSegment(microsToIso(startUs), n.id);
    let cur = startUs + Math.round(this.rng.range(1, 30) * 1000);
    for (const c of n.children) {
      this.layout(c, cur);
      cur = c.endUs + Math.round(this.rng.range(1, 20) * 1000);
    }
    n.endUs = n.children.length ? cur : startUs + this.duration(n.type);
  }

  private trace(lines: string[]): void {
    const r = this.rng;
    const remaining = this.spec.runs - this.produced;
    const project = r.weighted(this.projectCum);
    const rootType = ROOT_TYPES[r.weighted(ROOT_TYPE_CUM)];
    const root = this.node(rootType, rootType === 'chain' ? ROOT_NAMES[r.weighted(ROOT_NAME_CUM)] : r.pick(CHILD_NAMES[rootType]), null);
    const all: Node[] = [root];
    if (rootType === 'chain') {
      const nChildren = Math.min(remaining - 1, 2 + r.int(6)); // 2..7
      let prev: Node | null = null;
      for (let k = 0; k < nChildren; k++) {
        const type = k === 0 && r.float() < 0.5 ? 'retriever' : CHILD_TYPES[r.weighted(CHILD_TYPE_CUM)];
        // a child chain usually wraps the next step (prompt -> llm -> parser), up to depth 3
        const parent: Node = prev && prev.type === 'chain' && prev.depth < 3 && r.float() < 0.7 ? prev : root;
        const child = this.node(type, r.pick(CHILD_NAMES[type]), parent);
        parent.children.push(child);
        all.push(child);
        prev = child;
      }
    }
    // spread evenly over the window in arrival order (by run count, so the last trace starts inside it)
    const startUs = Math.round(this.spec.windowStartMs * 1000 + (this.produced + r.float() * all.length) * this.usPerRun);
    this.layout(root, startUs);

    // ~10% of traces fail: the last leaf fails and the error propagates to every ancestor;
    // ~7% of other children fail on their own (a retried call) without failing the trace:
    // about 10% of all runs end in error.
    if (r.float() < 0.1) {
      let n: Node | null = all[all.length - 1];
      const msg = `${r.pick(ERRORS)}\n  at step ${all.length - 1}`;
      while (n) {
        n.error = msg;
        n = n.parent;
      }
    }
    for (const n of all) if (n.parent && !n.error && r.float() < 0.07) n.error = r.pick(ERRORS);

    const env = ENVS[r.weighted(ENV_CUM)];
    const tags = r.float() < 0.05 ? [env, RARE_TAG] : [env];
    const metadata: Record<string, unknown> = {
      env,
      user_id: `user-${r.int(5000)}`,
      app_version: `1.${r.int(12)}.0`,
      conversation_id: root.id.slice(0, 18),
    };
    const sessionId = this.spec.projectIds[project];
    const tenant = this.spec.tenantId;
    for (const n of all) {
      lines.push(this.row(n, root, sessionId, tenant, tags, metadata));
      if (n.error) this.stats.errors++;
      this.sample(n, root, project);
    }
    if (root.error) this.stats.rootErrors++;
    this.produced += all.length;
    this.stats.runs += all.length;
    this.stats.traces++;
    this.stats.perProject[project] += all.length;
    this.stats.rootsPerProject[project]++;
  }

  private io(n: Node): { inputs: Record<string, unknown>; outputs: Record<string, unknown> } {
    switch (n.type) {
      case 'llm': {
        const input = Math.round(50 + this.rng.float() * 2000);
        const output = Math.round(10 + this.rng.float() * 500);
        return {
          inputs: { messages: [{ role: 'user', content: this.text(60, 120) }] },
          outputs: {
            generations: [{ text: this.text(60, 120) }],
            usage_metadata: { input_tokens: input, output_tokens: output, total_tokens: input + output },
          },
        };
      }
      case 'tool':
        return { inputs: { query: this.text(30, 60) }, outputs: { output: this.text(80, 160) } };
      case 'retriever':
        return { inputs: { query: this.text(30, 70) }, outputs: { documents: [{ page_content: this.text(80, 160) }] } };
      default:
        return n.parent ? { inputs: { input: this.text(60, 110) }, outputs: { output: this.text(60, 110) } } : { inputs: { question: this.text(60, 120) }, outputs: { answer: this.text(80, 160) } };
    }
  }

  /** The stored row, exactly as the writer builds it from the run's POST and PATCH. */
  private row(n: Node, root: Node, sessionId: string, tenant: string, tags: string[], metadata: Record<string, unknown>): string {
    const { inputs, outputs } = this.io(n);
    const meta = n.type === 'llm' ? { ...metadata, ls_provider: n.name === 'ChatOpenAI' ? 'openai' : 'anthropic', ls_model_name: this.rng.pick(MODELS) } : metadata;
    const postAt = microsToIso(n.startUs + 20_000);
    const patchUs = n.endUs + 20_000 + this.rng.int(200_000);
    const patchAt = microsToIso(patchUs);
    const run = emptyRun(tenant, n.id);
    const post: RunEvent = {
      kind: 'run',
      op: 'post',
      tenant_id: tenant,
      id: n.id,
      received_at: postAt,
      fields: {
        session_id: sessionId,
        trace_id: root.id,
        parent_run_id: n.parent ? n.parent.id : null,
        dotted_order: n.dotted,
        name: n.name,
        run_type: n.type,
        start_time: microsToIso(n.startUs),
        inputs,
        extra: { metadata: meta },
        tags,
      },
    };
    const patch: RunEvent = {
      kind: 'run',
      op: 'patch',
      tenant_id: tenant,
      id: n.id,
      received_at: patchAt,
      fields: n.error
        ? { trace_id: root.id, dotted_order: n.dotted, end_time: microsToIso(n.endUs), error: n.error }
        : { trace_id: root.id, dotted_order: n.dotted, end_time: microsToIso(n.endUs), outputs },
    };
    mergeEvent(run, post);
    mergeEvent(run, patch);
    const computed = computeRun(run, patchAt);
    // runs_by_id gets its rows from the runs insert (migration 0014), as the writer's do.
    return runRow(run, patchUs, patchAt, computed).line;
  }

  /** Reservoir sampling (algorithm R) of roots and of children, separately. */
  private sample(n: Node, root: Node, project: number): void {
    const s: SampleId = { id: n.id, trace_id: root.id, project, root: !n.parent };
    const [list, seen] = n.parent ? [this.sampleChildren, ++this.childrenSeen] : [this.sampleRoots, ++this.rootsSeen];
    const cap = this.sampleSize / 2;
    if (list.length < cap) list.push(s);
    else {
      const j = Math.floor(this.sampler.float() * seen);
      if (j < cap) list[j] = s;
    }
  }
}
