import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Session } from 'chdb';
import { compileFilter } from './filter-compiler';

/**
 * Runs compiled filters against the real ClickHouse engine (chDB, in process) to prove the SQL
 * is valid and selects the intended rows, including NULL handling and tenant isolation.
 */

const T1 = '11111111-1111-4111-8111-111111111111';
const T2 = '22222222-2222-4222-8222-222222222222';
const R1 = '00000000-0000-4000-8000-000000000001';
const R2 = '00000000-0000-4000-8000-000000000002';
const R3 = '00000000-0000-4000-8000-000000000003';
const R4 = '00000000-0000-4000-8000-000000000004';
const R5 = '00000000-0000-4000-8000-000000000005';
const EX = '00000000-0000-4000-8000-0000000000ee';
const WEIRD = `weird 'quote" name`;

const RUNS_DDL = `
CREATE TABLE runs (
  tenant_id UUID,
  id UUID,
  trace_id UUID,
  session_id UUID,
  parent_run_id Nullable(UUID),
  reference_example_id Nullable(UUID),
  name String,
  run_type LowCardinality(String),
  status LowCardinality(String),
  start_time DateTime64(6, 'UTC'),
  end_time Nullable(DateTime64(6, 'UTC')),
  is_root Bool,
  error Nullable(String),
  inputs String,
  outputs String,
  tags Array(String),
  metadata Map(String, String),
  total_tokens UInt64,
  prompt_tokens UInt64,
  completion_tokens UInt64,
  total_cost Nullable(Float64),
  prompt_cost Nullable(Float64),
  completion_cost Nullable(Float64),
  first_token_time Nullable(DateTime64(6, 'UTC')),
  trace_tier LowCardinality(String),
  dotted_order String
) ENGINE = MergeTree ORDER BY (tenant_id, id)`;

// FINAL needs a Replacing engine; a later row with the same (tenant_id, id) replaces the earlier one.
const FEEDBACK_DDL = `
CREATE TABLE feedback (
  tenant_id UUID,
  id UUID,
  run_id Nullable(UUID),
  key String,
  score Nullable(Float64),
  value String,
  is_deleted UInt8
) ENGINE = ReplacingMergeTree ORDER BY (tenant_id, id)`;

interface RunRow {
  id: string;
  name: string;
  run_type: string;
  status: string;
  parent_run_id: string | null;
  start_time: string;
  end_time: string | null;
  first_token_time: string | null;
  error: string | null;
  inputs: Record<string, unknown>;
  outputs: Record<string, unknown>;
  tags: string[];
  metadata: Record<string, string>;
  total_tokens: number;
  total_cost: number | null;
  trace_tier: string;
  reference_example_id?: string;
}

const RUNS: RunRow[] = [
  {
    id: R1,
    name: 'ChatOpenAI',
    run_type: 'llm',
    status: 'success',
    parent_run_id: R3,
    start_time: '2026-01-01 00:00:01.000000',
    end_time: '2026-01-01 00:00:02.500000',
    first_token_time: '2026-01-01 00:00:01.300000',
    error: null,
    inputs: { question: 'What is the Capital of France?', n: 3, nested: { lang: 'fr' }, stream: true },
    outputs: { answer: 'Paris' },
    tags: ['prod', 'llm'],
    metadata: { conversation_id: 'c1', model: 'gpt-4o', temperature: '0.2' },
    total_tokens: 1200,
    total_cost: 0.02,
    trace_tier: 'longlived',
  },
  {
    id: R2,
    name: 'retriever',
    run_type: 'retriever',
    status: 'error',
    parent_run_id: R3,
    start_time: '2026-01-02 00:00:00.000000',
    end_time: '2026-01-02 00:00:12.000000',
    first_token_time: null,
    error: 'Timeout while fetching docs',
    inputs: { query: "docs about O'Brien" },
    outputs: {},
    tags: ['beta'],
    metadata: { conversation_id: 'c2', temperature: '0.9' },
    total_tokens: 0,
    total_cost: null,
    trace_tier: 'shortlived',
  },
  {
    id: R3,
    name: 'AgentExecutor',
    run_type: 'chain',
    status: 'success',
    parent_run_id: null,
    start_time: '2026-01-01 00:00:00.000000',
    end_time: '2026-01-01 00:00:20.000000',
    first_token_time: null,
    error: null,
    inputs: { input: 'hello' },
    outputs: { output: 'Hi there' },
    tags: ['prod', 'experimental'],
    metadata: { thread_id: 'c1' },
    total_tokens: 5600,
    total_cost: 0.1,
    trace_tier: 'shortlived',
    reference_example_id: EX,
  },
  {
    id: R4,
    name: 'tool_call',
    run_type: 'tool',
    status: 'pending',
    parent_run_id: R3,
    start_time: '2026-02-01 00:00:00.000000',
    end_time: null,
    first_token_time: null,
    error: null,
    inputs: {},
    outputs: {},
    tags: [],
    metadata: {},
    total_tokens: 0,
    total_cost: null,
    trace_tier: 'shortlived',
  },
  {
    id: R5,
    name: WEIRD,
    run_type: 'chain',
    status: 'success',
    parent_run_id: null,
    start_time: '2026-03-01 00:00:00.000000',
    end_time: '2026-03-01 00:00:00.500000',
    first_token_time: null,
    error: null,
    inputs: { x: '100%' },
    outputs: { y: 'a_b' },
    tags: ['v1.2'],
    metadata: { env: 'prod' },
    total_tokens: 10,
    total_cost: 0.001,
    trace_tier: 'shortlived',
  },
];

interface FeedbackRow {
  tenant_id: string;
  id: string;
  run_id: string | null;
  key: string;
  score: number | null;
  value: string;
  is_deleted: number;
}

const fb = (n: number, tenant: string, run: string | null, key: string, score: number | null, value = '', deleted = 0): FeedbackRow => ({
  tenant_id: tenant,
  id: `f0000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  run_id: run,
  key,
  score,
  value,
  is_deleted: deleted,
});

const FEEDBACK: FeedbackRow[] = [
  fb(1, T1, R1, 'correctness', 1),
  fb(2, T1, R2, 'correctness', 0),
  fb(3, T1, R3, 'user_score', 0.4, 'meh'),
  fb(4, T1, R3, 'correctness', 1),
  fb(5, T2, R2, 'helpfulness', 1),
  fb(6, T1, R1, 'helpfulness', 0.2, 'good'),
  fb(7, T1, null, 'orphan', 1),
];
// Soft delete of feedback 4, written later as a new version of the same row.
const FEEDBACK_LATER: FeedbackRow[] = [fb(4, T1, R3, 'correctness', 1, '', 1)];

const ALL = ['AgentExecutor', 'ChatOpenAI', 'retriever', 'tool_call', WEIRD].sort();

let dir: string;
let session: Session;

function insert(table: string, rows: object[]): void {
  session.query(`INSERT INTO ${table} FORMAT JSONEachRow\n${rows.map((r) => JSON.stringify(r)).join('\n')}`);
}

function select(filter: string): string[] {
  const { sql, params } = compileFilter(filter, { paramPrefix: 'f', tenantParam: 'tenant' });
  const out = session.queryBind(
    `SELECT name FROM runs WHERE tenant_id = {tenant:UUID} AND (${sql}) ORDER BY name FORMAT JSONEachRow`,
    { ...params, tenant: T1 },
  );
  return out
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => (JSON.parse(line) as { name: string }).name)
    .sort();
}

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'filter-ch-'));
  session = new Session(dir);
  session.query(RUNS_DDL);
  session.query(FEEDBACK_DDL);
  insert(
    'runs',
    RUNS.map((r) => ({
      tenant_id: T1,
      id: r.id,
      trace_id: R3,
      session_id: T1,
      parent_run_id: r.parent_run_id,
      reference_example_id: r.reference_example_id ?? null,
      name: r.name,
      run_type: r.run_type,
      status: r.status,
      start_time: r.start_time,
      end_time: r.end_time,
      is_root: r.parent_run_id === null,
      error: r.error,
      inputs: JSON.stringify(r.inputs),
      outputs: JSON.stringify(r.outputs),
      tags: r.tags,
      metadata: r.metadata,
      total_tokens: r.total_tokens,
      prompt_tokens: Math.floor(r.total_tokens * 0.8),
      completion_tokens: r.total_tokens - Math.floor(r.total_tokens * 0.8),
      total_cost: r.total_cost,
      prompt_cost: r.total_cost,
      completion_cost: null,
      first_token_time: r.first_token_time,
      trace_tier: r.trace_tier,
      dotted_order: `${r.start_time.replace(/[-: .]/g, '')}Z${r.id}`,
    })),
  );
  // A run in another tenant that matches almost everything; the outer tenant predicate must hide it.
  insert('runs', [
    {
      tenant_id: T2,
      id: R1,
      trace_id: R1,
      session_id: T2,
      parent_run_id: null,
      reference_example_id: null,
      name: 'other-tenant',
      run_type: 'llm',
      status: 'success',
      start_time: '2026-01-01 00:00:00.000000',
      end_time: null,
      is_root: true,
      error: null,
      inputs: '{}',
      outputs: '{}',
      tags: ['prod'],
      metadata: {},
      total_tokens: 0,
      prompt_tokens: 0,
      completion_tokens: 0,
      total_cost: null,
      prompt_cost: null,
      completion_cost: null,
      first_token_time: null,
      trace_tier: 'shortlived',
      dotted_order: '',
    },
  ]);
  insert('feedback', FEEDBACK);
  insert('feedback', FEEDBACK_LATER);
});

afterAll(() => {
  session?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const not = (...names: string[]): string[] => ALL.filter((n) => !names.includes(n));

describe('compiled filters on ClickHouse (chDB)', () => {
  it('sees the whole fixture of tenant 1 and nothing of tenant 2', () => {
    expect(select('search("")')).toEqual(ALL);
  });

  it.each<[string, string[]]>([
    // plain columns
    ['eq(name, "ChatOpenAI")', ['ChatOpenAI']],
    [`eq(name, "weird 'quote\\" name")`, [WEIRD]],
    [`eq(name, "x' OR 1=1 --")`, []],
    ['neq(run_type, "chain")', ['ChatOpenAI', 'retriever', 'tool_call']],
    ['in(run_type, ["llm", "tool"])', ['ChatOpenAI', 'tool_call']],
    ['eq(status, "error")', ['retriever']],
    ['eq(trace_tier, "longlived")', ['ChatOpenAI']],
    ['ilike(trace_tier, "LONG%")', ['ChatOpenAI']],
    ['like(name, "Chat%")', ['ChatOpenAI']],
    ['ilike(name, "chat%")', ['ChatOpenAI']],
    ['search(name, "EXEC")', ['AgentExecutor']],
    ['gt(dotted_order, "20260201")', ['tool_call', WEIRD]],
    ['gt(total_tokens, 1000)', ['AgentExecutor', 'ChatOpenAI']],
    ['in(total_tokens, [0])', ['retriever', 'tool_call']],
    ['lte(prompt_tokens, 8)', ['retriever', 'tool_call', WEIRD]],
    ['gt(completion_tokens, 1000)', ['AgentExecutor']],
    ['gt(total_cost, 0.05)', ['AgentExecutor']],
    ['neq(total_cost, 0.02)', not('ChatOpenAI')],
    ['eq(total_cost, null)', ['retriever', 'tool_call']],
    ['lt(prompt_cost, 0.05)', ['ChatOpenAI', WEIRD]],
    ['eq(completion_cost, null)', ALL],
    ['eq(is_root, true)', ['AgentExecutor', WEIRD]],
    ['neq(is_root, true)', ['ChatOpenAI', 'retriever', 'tool_call']],
    // ids
    [`eq(run_id, "${R1}")`, ['ChatOpenAI']],
    [`in(id, ["${R1}", "${R2.toUpperCase()}"])`, ['ChatOpenAI', 'retriever']],
    [`eq(trace_id, "${R3}")`, ALL],
    [`eq(session_id, "${T1}")`, ALL],
    [`eq(parent_run_id, "${R3}")`, ['ChatOpenAI', 'retriever', 'tool_call']],
    [`neq(parent_run_id, "${R3}")`, ['AgentExecutor', WEIRD]],
    ['eq(parent_run_id, null)', ['AgentExecutor', WEIRD]],
    ['neq(reference_example_id, null)', ['AgentExecutor']],
    [`eq(reference_example_id, "${EX}")`, ['AgentExecutor']],
    // time
    ['gt(start_time, "2026-01-01T12:00:00Z")', ['retriever', 'tool_call', WEIRD]],
    ['gte(start_time, "2026-01-01 00:00:01")', not('AgentExecutor')],
    ['lt(start_time, "2026-01-01T02:00:00.5+02:00")', ['AgentExecutor']],
    ['eq(start_time, "2026-01-02T00:00:00.000000Z")', ['retriever']],
    ['eq(end_time, null)', ['tool_call']],
    ['lt(end_time, "2026-01-01T00:00:05Z")', ['ChatOpenAI']],
    ['lt(first_token_time, "2026-01-01T00:00:02Z")', ['ChatOpenAI']],
    // latency
    ['gt(latency, 10)', ['AgentExecutor', 'retriever']],
    ['lt(latency, "2s")', ['ChatOpenAI', WEIRD]],
    ['lte(latency, "500ms")', [WEIRD]],
    ['eq(latency, 1.5)', ['ChatOpenAI']],
    ['not(gt(latency, 10))', ['ChatOpenAI', 'tool_call', WEIRD]],
    ['neq(latency, 1.5)', not('ChatOpenAI')],
    ['eq(latency, null)', ['tool_call']],
    // error
    ['eq(error, true)', ['retriever']],
    ['eq(error, false)', not('retriever')],
    ['neq(error, null)', ['retriever']],
    ['search(error, "FETCH")', ['retriever']],
    ['eq(error, "Timeout while fetching docs")', ['retriever']],
    ['neq(error, "Timeout while fetching docs")', not('retriever')],
    ['like(error, "Timeout%")', ['retriever']],
    // search
    ['search("capital")', ['ChatOpenAI']],
    ['search("TIMEOUT")', ['retriever']],
    [`search("o'brien")`, ['retriever']],
    ['search("hi THERE")', ['AgentExecutor']],
    ['search("no such text")', []],
    // tags
    ['has(tags, "prod")', ['AgentExecutor', 'ChatOpenAI']],
    ['eq(tag, "prod")', ['AgentExecutor', 'ChatOpenAI']],
    ['not(has(tags, "prod"))', ['retriever', 'tool_call', WEIRD]],
    ['neq(tags, "prod")', ['retriever', 'tool_call', WEIRD]],
    ['in(tags, ["beta", "experimental"])', ['AgentExecutor', 'retriever']],
    ['search(tags, "V1.")', [WEIRD]],
    ['like(tags, "v1._")', [WEIRD]],
    // metadata
    ['has(metadata, "model")', ['ChatOpenAI']],
    [`has(metadata, '{"conversation_id": "c1", "model": "gpt-4o"}')`, ['ChatOpenAI']],
    [`has(metadata, '{"conversation_id": "c1", "model": "x"}')`, []],
    ['search(metadata, "GPT")', ['ChatOpenAI']],
    ['and(eq(metadata_key, "conversation_id"), eq(metadata_value, "c1"))', ['ChatOpenAI']],
    ['and(eq(metadata_key, "conversation_id"), neq(metadata_value, "c1"))', ['retriever']],
    ['and(in(metadata_key, ["conversation_id", "thread_id"]), eq(metadata_value, "c1"))', ['AgentExecutor', 'ChatOpenAI']],
    ['and(eq(metadata_key, "temperature"), lt(metadata_value, 0.5))', ['ChatOpenAI']],
    ['and(eq(metadata_key, "temperature"), gt(metadata_value, 0.5))', ['retriever']],
    ['and(eq(metadata_key, "missing"), eq(metadata_value, ""))', []],
    ['and(eq(name, "ChatOpenAI"), eq(metadata_key, "conversation_id"), eq(metadata_value, "c1"))', ['ChatOpenAI']],
    ['and(eq(name, "retriever"), eq(metadata_key, "conversation_id"), eq(metadata_value, "c1"))', []],
    ['eq(metadata_key, "model")', ['ChatOpenAI']],
    ['neq(metadata_key, "conversation_id")', ['AgentExecutor', 'tool_call', WEIRD]],
    ['in(metadata_key, ["env", "thread_id"])', ['AgentExecutor', WEIRD]],
    ['search(metadata_key, "THREAD")', ['AgentExecutor']],
    ['eq(metadata_value, "c1")', ['AgentExecutor', 'ChatOpenAI']],
    ['neq(metadata_value, "c1")', ['retriever', 'tool_call', WEIRD]],
    ['in(metadata_value, ["c2", "prod"])', ['retriever', WEIRD]],
    ['gt(metadata_value, 0.5)', ['retriever']],
    // inputs / outputs
    ['has(inputs, "question")', ['ChatOpenAI']],
    ['has(inputs, "nested.lang")', ['ChatOpenAI']],
    ['has(outputs, "output")', ['AgentExecutor']],
    ['search(inputs, "FRANCE")', ['ChatOpenAI']],
    ['like(inputs, "%100\\\\%%")', [WEIRD]],
    ['like(outputs, "%a\\\\_b%")', [WEIRD]],
    ['and(eq(input_key, "question"), search(input_value, "capital"))', ['ChatOpenAI']],
    ['and(eq(input_key, "nested.lang"), eq(input_value, "fr"))', ['ChatOpenAI']],
    ['and(eq(input_key, "n"), gte(input_value, 3))', ['ChatOpenAI']],
    ['and(eq(input_key, "n"), gt(input_value, 3))', []],
    ['and(eq(input_key, "stream"), eq(input_value, true))', ['ChatOpenAI']],
    ['and(in(output_key, ["answer", "output"]), search(output_value, "i"))', ['AgentExecutor', 'ChatOpenAI']],
    ['eq(input_key, "query")', ['retriever']],
    ['in(input_key, ["query", "input"])', ['AgentExecutor', 'retriever']],
    ['search(output_key, "ANS")', ['ChatOpenAI']],
    ['eq(output_value, "Paris")', ['ChatOpenAI']],
    ['neq(output_value, "Paris")', not('ChatOpenAI')],
    ['gt(input_value, 2)', ['ChatOpenAI']],
    ['eq(input_value, true)', ['ChatOpenAI']],
    // feedback
    ['eq(feedback_key, "helpfulness")', ['ChatOpenAI']],
    ['and(eq(feedback_key, "correctness"), gt(feedback_score, 0.5))', ['ChatOpenAI']],
    ['and(eq(feedback_key, "correctness"), lt(feedback_score, 0.5))', ['retriever']],
    ['and(eq(feedback_key, "helpfulness"), gt(feedback_score, 0.5))', []],
    ['and(eq(feedback_key, "helpfulness"), eq(feedback_key, "correctness"))', ['ChatOpenAI']],
    ['neq(feedback_key, "correctness")', ['AgentExecutor', 'tool_call', WEIRD]],
    ['eq(feedback_key, "orphan")', []],
    ['eq(feedback_score, true)', ['ChatOpenAI']],
    ['and(eq(feedback_key, "user_score"), eq(feedback_value, "meh"))', ['AgentExecutor']],
    ['search(feedback_value, "GOO")', ['ChatOpenAI']],
    ['in(feedback_key, ["user_score", "helpfulness"])', ['AgentExecutor', 'ChatOpenAI']],
    // logic
    [
      'and(gt(start_time, "2025-07-15T12:34:56Z"), or(neq(error, null), and(eq(feedback_key, "correctness"), eq(feedback_score, 1))))',
      ['ChatOpenAI', 'retriever'],
    ],
    ['and(or(has(tags, "experimental"), has(tags, "beta")), gt(latency, 2))', ['AgentExecutor', 'retriever']],
    ['and(eq(run_type, "chain"), gt(latency, 10), gt(total_tokens, 5000))', ['AgentExecutor']],
    ['or(eq(name, "tool_call"), not(or(eq(is_root, false), lt(latency, 1))))', ['AgentExecutor', 'tool_call']],
    ['not(not(eq(name, "ChatOpenAI")))', ['ChatOpenAI']],
  ])('%s', (filter, expected) => {
    expect(select(filter)).toEqual([...expected].sort());
  });
});
