import { createHash, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { Client } from 'pg';
import { IdentityService } from '@th/gateway';
import {
  SCHEMA_BREAKING,
  createDocumentValidator,
  danglingRefs,
  invalidBody,
  listOperations,
  multipartBody,
  resolvePointer,
  schemaArbitrary,
  schemaPointers,
  type InvalidClass,
  type OpenApiDocument,
  type OpenApiOperation,
} from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

/**
 * Both OpenAPI documents the service serves are valid, and every operation in them, fed generated valid and
 * invalid bodies, parameters and headers, answers without a 5xx, with a status and body its document gives,
 * and leaves nothing written when it refuses the request. Reproduce a run with FUZZ_SEED=<seed printed>
 * (FUZZ_VERBOSE=1 prints each valid request's answer and each operation's time).
 *
 * No operation is skipped, deletions included (they run last; the caller's own key is never among the ids sent).
 * The service runs without its rollout worker and with export ticks an hour apart: generated deployments would
 * otherwise run generated build commands, and spawned exports would write while writes are compared.
 */

const VERBOSE = process.env.FUZZ_VERBOSE === '1';
const SEED = Number(process.env.FUZZ_SEED ?? 27_2026);
const VALID_CASES = 3;
const MAX_CASES_PER_OPERATION = 20;
/** The whole fuzz pass over both documents (30-60 s on 2 quiet cores; the margin is for a loaded machine); past it the test fails naming the operations it did not reach. */
const BUDGET_MS = 180_000;
/** An answer slower than this is a stall. */
const REQUEST_TIMEOUT_MS = 15_000;

type InputClass =
  | 'valid'
  | `body:${InvalidClass}`
  | 'path:random-uuid'
  | 'path:junk'
  | 'query:wrong-type'
  | 'query:huge'
  | 'query:bad-timestamp'
  | 'auth:none'
  | 'auth:junk-key'
  | 'auth:junk-bearer';

const BODY_CLASSES: InvalidClass[] = ['not-json', 'wrong-type', 'missing-required', 'extra-property', 'huge-string', 'deep-nesting', 'nul', 'lone-surrogate', 'huge-number', 'bad-timestamp'];
const JUNK_PATH = ['x', '%00', 'a'.repeat(300), '..%2F..%2Fetc', "'%20OR%201%3D1", '%F0%9F%92%A9', '-1'];
const BAD_QUERY_TIMES = ['0000-01-01T00:00:00Z', '2024-02-30T00:00:00Z', '2024-01-01T25:00:00Z'];
/** Inputs no operation may accept: one write comparison covers them together (see the fuzz loop). */
const SURELY_REFUSED: ReadonlySet<InputClass> = new Set<InputClass>([
  'auth:none', 'auth:junk-key', 'auth:junk-bearer', 'path:junk', 'query:wrong-type',
  ...[...SCHEMA_BREAKING].map((c) => `body:${c}` as InputClass),
]);

/** Operations that may write ClickHouse (runs, feedback, prices, feedback configs); the others are compared in PostgreSQL only. */
const CLICKHOUSE_WRITERS = /\/(runs|feedback|feedback-configs|model-price-map|otel|sessions|datasets\/upload-experiment)(\/|$)/;
const freeJsonObject = fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean()), { maxKeys: 2 });
const QUERY_TIME_NAME = /(_time|_at|^as_of)$/;

interface Failure {
  document: string;
  operation: string;
  input: InputClass;
  what: string;
  request: string;
}

interface Case {
  input: InputClass;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** The generated body value (valid cases). */
  value?: unknown;
}

/** A body the service accepted, made new again: a fresh top-level id and name, so a replay is not refused as a duplicate. */
function fresh(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const v = { ...(value as Record<string, unknown>) };
  if (typeof v.id === 'string') v.id = randomUUID();
  if (typeof v.name === 'string') v.name = `${v.name.slice(0, 20)}-${randomUUID().slice(0, 8)}`;
  return v;
}

const short = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);
const opSeed = (operation: string) => (SEED ^ createHash('sha1').update(operation).digest().readInt32BE(0)) | 0;

describe('the OpenAPI documents, and a fuzz of every operation in them', () => {
  let svc: TestStandalone;
  let tenant: { organization_id: string; workspace_id: string; api_key: string; api_key_id: string };
  let pg: Client;
  const docs: { name: string; doc: OpenApiDocument; validator: ReturnType<typeof createDocumentValidator> }[] = [];
  /** Ids of the tenant's own resources, by path parameter name (valid path parameters). */
  const known: Record<string, string[]> = {};
  /** The tenant's resource a path's `{id}` names, by the path. */
  const idOfPath: [RegExp, string][] = [];

  const auth = () => ({ 'x-api-key': tenant.api_key, 'x-organization-id': tenant.organization_id });
  const call = async (method: string, path: string, json?: unknown) => {
    const res = await fetch(`${svc.url}${path}`, {
      method,
      headers: { ...auth(), ...(json !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: json !== undefined ? JSON.stringify(json) : undefined,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };

  beforeAll(async () => {
    // No builds (generated deployments would run generated commands) and no export worker ticks (generated
    // exports would spawn rows while writes are being compared): the HTTP surface is what is fuzzed.
    svc = await startTestStandalone({ ROLLOUT_WORKER: 'false', EXPORT_POLL_MS: String(3_600_000) });
    tenant = await svc.app.get(IdentityService).createOrganization({ name: `fuzz-${randomUUID()}`, plan: 'enterprise', canUseAuditLogs: true });
    pg = new Client({ connectionString: svc.databaseUrl });
    await pg.connect();
    for (const [name, path] of [
      ['/openapi.json', '/openapi.json'],
      ['/v2/openapi.json', '/v2/openapi.json'],
    ]) {
      const res = await fetch(`${svc.url}${path}`);
      expect(res.status).toBe(200);
      const doc = (await res.json()) as OpenApiDocument;
      docs.push({ name, doc, validator: createDocumentValidator(doc) });
    }
    // One resource of each kind the tenant owns, so that valid path parameters reach existing rows.
    const project = await call('POST', '/api/v1/sessions', { name: `fuzz-${randomUUID()}` });
    const runId = randomUUID();
    await call('POST', '/api/v1/runs', { id: runId, name: 'fuzz', run_type: 'chain', session_id: project.id, start_time: new Date().toISOString(), inputs: { q: 1 } });
    const feedback = await call('POST', '/api/v1/feedback', { run_id: runId, key: 'fuzz', score: 1 });
    const dataset = await call('POST', '/api/v1/datasets', { name: `fuzz-${randomUUID()}` });
    const example = await call('POST', '/api/v1/examples', { dataset_id: dataset.id, inputs: { q: 1 }, outputs: { a: 2 } });
    const price = await call('POST', '/api/v1/model-price-map', { name: 'fuzz', match_pattern: '^fuzz$', prompt_cost: 0.001, completion_cost: 0.002 });
    const role = await call('POST', '/api/v1/orgs/current/roles', { name: 'fuzz', permissions: ['runs:read'] });
    // Keys other than the caller's: deleting them leaves the fuzz its own.
    const apiKey = await call('POST', '/api/v1/api-key', { description: 'fuzz' });
    const serviceKey = await call('POST', '/api/v1/service-keys', { description: 'fuzz' });
    const workspace = await call('POST', '/api/v1/workspaces', { name: `fuzz-${randomUUID()}` });
    const deployment = await call('POST', '/v2/deployments', {
      name: `fuzz-${randomUUID().slice(0, 8)}`,
      source: 'internal_source',
      source_config: {},
      source_revision_config: { langgraph_config_path: 'langgraph.json' },
      secrets: [],
    });
    // `{id}` names a different kind of resource on each path.
    idOfPath.push(
      [/\/model-price-map\//, price.id as string],
      [/\/orgs\/current\/roles\//, role.id as string],
      [/\/api-key\/\{id\}/, apiKey.id as string],
      [/\/service-keys\//, serviceKey.id as string],
      [/\/workspaces\/\{id\}/, workspace.id as string],
    );
    Object.assign(known, {
      run_id: [runId],
      session_id: [project.id as string],
      feedback_id: [feedback.id as string],
      dataset_id: [dataset.id as string],
      deployment_id: [deployment.id as string],
      revision_id: [deployment.latest_revision_id as string],
      example_id: [example.id as string],
      // Body properties that hold the same kinds of ids.
      trace_id: [runId],
      parent_run_id: [runId],
      reference_example_id: [example.id as string],
      example_ids: [example.id as string],
      source_dataset_id: [dataset.id as string],
      target_dataset_id: [dataset.id as string],
    });
  });
  afterAll(async () => {
    await pg?.end();
    await svc?.close();
  });

  it('both documents are OpenAPI 3.0 whose every $ref resolves and every schema compiles (ajv, strict)', () => {
    expect(docs.map((d) => d.doc.openapi)).toEqual(['3.0.3', '3.0.3']);
    for (const { name, doc, validator } of docs) {
      expect({ name, dangling: danglingRefs(doc) }).toEqual({ name, dangling: [] });
      const broken: string[] = [];
      // One compilation per distinct schema (many operations share the error bodies).
      const distinct = new Map(schemaPointers(doc).map((p) => [JSON.stringify(resolvePointer(doc, p)), p]));
      for (const pointer of distinct.values()) {
        try {
          validator.compile(pointer);
        } catch (err) {
          broken.push(`${pointer}: ${(err as Error).message}`);
        }
      }
      expect({ name, broken }).toEqual({ name, broken: [] });
    }
  });

  it('projects listed and read with include_stats match the document (statistics fields included)', async () => {
    const { doc, validator } = docs[0];
    const ops = listOperations(doc);
    for (const [path, url] of [
      ['/api/v1/sessions', `/api/v1/sessions?include_stats=true&id=${known.session_id[0]}`],
      ['/api/v1/sessions/{session_id}', `/api/v1/sessions/${known.session_id[0]}?include_stats=true`],
    ]) {
      const op = ops.find((o) => o.method === 'get' && o.path === path)!;
      const answer = await send('GET', { input: 'valid', path: url, headers: auth() });
      if (answer instanceof Error) throw answer;
      expect(answer.status).toBe(200);
      const body = JSON.parse(answer.text) as unknown;
      expect(JSON.stringify(body)).toContain('"run_count":1');
      const validate = validator.compile(op.responses['200']!);
      expect({ path, valid: validate(body), errors: validate.errors ?? null }).toEqual({ path, valid: true, errors: null });
    }
  });

  it('every documented operation is routed: none answers the 404 of a path the service does not have', async () => {
    // The router's own 404 for a method, with the path in it replaced by a placeholder.
    const routerNotFound = new Map<string, string>();
    const isRouterNotFound = async (method: string, path: string, status: number, text: string) => {
      if (!routerNotFound.has(method)) {
        const probe = `/api/v1/fuzz-no-such-route-${randomUUID()}`;
        const answer = await send(method, { input: 'valid', path: probe, headers: auth() });
        if (answer instanceof Error || answer.status !== 404) throw new Error(`${method} ${probe}: expected the router's 404`);
        routerNotFound.set(method, answer.text.replaceAll(probe, '<path>'));
      }
      return status === 404 && text.replaceAll(path, '<path>') === routerNotFound.get(method);
    };
    const notRouted: string[] = [];
    const nowhere = await send('GET', { input: 'valid', path: '/api/v1/nowhere', headers: auth() });
    expect(nowhere instanceof Error ? nowhere : await isRouterNotFound('GET', '/api/v1/nowhere', nowhere.status, nowhere.text)).toBe(true);
    for (const { doc } of docs) {
      for (const op of listOperations(doc)) {
        // Random ids: a resource's 404 must still differ from the router's (and the tenant's resources stay for the fuzz).
        const path = op.path.replace(/\{(\w+)\}/g, () => randomUUID());
        const answer = await send(op.method.toUpperCase(), { input: 'valid', path, headers: { ...auth(), 'content-type': 'application/json' }, body: op.body ? '{}' : undefined });
        if (answer instanceof Error) {
          notRouted.push(`${op.method} ${op.path}: no answer (${answer.message})`);
          continue;
        }
        const { status, text } = answer;
        if (await isRouterNotFound(op.method.toUpperCase(), path, status, text)) notRouted.push(`${op.method} ${op.path}`);
      }
    }
    expect(notRouted).toEqual([]);
  });

  it(`fuzz: every operation of both documents, at most ${MAX_CASES_PER_OPERATION} cases each, seed ${SEED}`, async () => {
    const started = Date.now();
    const failures: Failure[] = [];
    const unreached: string[] = [];
    let cases = 0;
    let operations = 0;
    let acceptedOps = 0;

    // PostgreSQL rows of every table (audit records excluded: refusals are audited on purpose) and ClickHouse rows
    // of the tenant; a refused request must leave both as they were.
    const tables = (
      await pg.query<{ s: string; t: string }>(
        `SELECT table_schema AS s, table_name AS t FROM information_schema.tables
         WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema', 'audit') ORDER BY 1, 2`,
      )
    ).rows;
    const pgSnapshotSql = tables
      // Row count and the sum of the rows' xmin: any insert, update or delete changes one, without reading the rows' content.
      .map(({ s, t }) => `SELECT '${s}.${t}' AS k, count(*)::text || '/' || coalesce(sum(x.xmin::text::bigint), 0)::text AS v FROM "${s}"."${t}" x`)
      .join(' UNION ALL ');
    let snapMs = 0;
    let sendMs = 0;
    let genMs = 0;
    let settleMs = 0;
    let settles = 0;
    let checkMs = 0;
    let chMs = 0;
    const snapshot = async (withClickHouse: boolean): Promise<Map<string, string>> => {
      const t0 = Date.now();
      const rows = (await pg.query<{ k: string; v: string }>(pgSnapshotSql)).rows.map((r) => [r.k, r.v] as [string, string]);
      const t1 = Date.now();
      if (!withClickHouse) return new Map(rows);
      const ch = await svc.ch.query<Record<string, string>>(
        `SELECT (SELECT count() FROM runs WHERE tenant_id = {t:UUID}) AS runs, (SELECT count() FROM run_attachments WHERE tenant_id = {t:UUID}) AS run_attachments,
                (SELECT count() FROM feedback WHERE tenant_id = {t:UUID}) AS feedback, (SELECT count() FROM model_price_map WHERE tenant_id = {t:UUID}) AS model_price_map,
                (SELECT count() FROM feedback_configs WHERE tenant_id = {t:UUID}) AS feedback_configs`,
        { t: tenant.workspace_id },
      );
      for (const [k, v] of Object.entries(ch[0])) rows.push([`clickhouse.${k}`, String(v)]);
      chMs += Date.now() - t1;
      snapMs += Date.now() - t0;
      return new Map(rows);
    };
    const changed = (a: Map<string, string>, b: Map<string, string>) => [...b.keys()].filter((k) => a.get(k) !== b.get(k));
    // Feedback reaches ClickHouse through the bus after its answer: an accepted write is waited for (bounded).
    const settled = async () => {
      const t0 = Date.now();
      settles++;
      try {
        return await settle();
      } finally {
        settleMs += Date.now() - t0;
      }
    };
    const settle = async () => {
      let last = await snapshot(true);
      for (const deadline = Date.now() + 3_000; Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 50));
        const next = await snapshot(true);
        if (changed(last, next).length === 0) return next;
        last = next;
      }
      return last;
    };

    for (const { name, doc, validator } of docs) {
      // Deletions last, so the tenant's resources exist for the other operations.
      const ops = listOperations(doc).sort((a, b) => Number(a.method === 'delete') - Number(b.method === 'delete'));
      for (const op of ops) {
        const label = `${op.method.toUpperCase()} ${op.path}`;
        if (Date.now() - started > BUDGET_MS) {
          unreached.push(label);
          continue;
        }
        operations++;
        const opStarted = Date.now();
        const gen = caseGenerator(doc, op, opSeed(`${name} ${label}`));
        const ch = CLICKHOUSE_WRITERS.test(op.path);
        let before = await snapshot(ch);
        let accepted: unknown;
        let anyAccepted = false;
        /** Sends a case and checks its answer; with `compare`, a refusal is checked for writes on its own. */
        const run = async (c: Case, compare: boolean): Promise<number> => {
          cases++;
          const request = `${op.method.toUpperCase()} ${c.path}${c.body !== undefined ? ` ${short(String(c.body))}` : ''}`;
          const fail = (what: string) => failures.push({ document: name, operation: label, input: c.input, what, request });
          const t0 = Date.now();
          const answer = await send(op.method.toUpperCase(), c);
          sendMs += Date.now() - t0;
          if (answer instanceof Error) {
            fail(`no answer: ${answer.message}`);
            if (compare) before = await snapshot(ch);
            return 0;
          }
          const tc = Date.now();
          checkAnswer(validator, op, c, answer.status, answer.contentType, answer.text, fail);
          checkMs += Date.now() - tc;
          if (VERBOSE && c.input === 'valid') process.stdout.write(`${label} valid ${answer.status} ${short(answer.text, 200)}\n`);
          if (c.input === 'valid' && answer.status < 300) anyAccepted = true;
          // The richest accepted body is the one invalid bodies are made from.
          if (c.input === 'valid' && answer.status < 300 && JSON.stringify(c.value ?? null).length >= JSON.stringify(accepted ?? null).length) accepted = c.value;
          if (!compare) return answer.status;
          if (answer.status >= 400 && answer.status < 500) {
            const after = await snapshot(ch);
            const diff = changed(before, after);
            if (diff.length) fail(`refused with ${answer.status} but wrote: ${diff.join(', ')}`);
            before = after;
          } else {
            before = ch ? await settled() : await snapshot(ch);
          }
          return answer.status;
        };
        let tg = Date.now();
        const valid = gen.valid();
        genMs += Date.now() - tg;
        for (const c of valid) await run(c, true);
        if (anyAccepted) acceptedOps++;
        // Invalid inputs are made from a body the service accepted, so each reaches past the checks a random body fails.
        tg = Date.now();
        const invalid = gen.invalid(accepted, MAX_CASES_PER_OPERATION - valid.length);
        genMs += Date.now() - tg;
        for (const c of invalid.filter((c) => !SURELY_REFUSED.has(c.input))) await run(c, true);
        // The inputs nothing may accept share one comparison; when one was accepted after all, or something was
        // written, they are replayed one by one so that the write is pinned to its request.
        const refused = invalid.filter((c) => SURELY_REFUSED.has(c.input));
        const statuses: number[] = [];
        for (const c of refused) statuses.push(await run(c, false));
        const after = refused.length ? await snapshot(ch) : before;
        if (statuses.some((st) => st < 400 || st >= 500) || changed(before, after).length) {
          before = ch ? await settled() : after;
          for (const c of refused.filter((_, i) => statuses[i] >= 400 && statuses[i] < 500)) await run(c, true);
        } else {
          before = after;
        }
        if (VERBOSE) process.stdout.write(`time ${Date.now() - opStarted} ms ${label}\n`);
      }
    }

    const elapsed = Date.now() - started;
    process.stdout.write(
      `fuzz time: requests ${sendMs} ms, write snapshots ${snapMs} ms (${tables.length} PostgreSQL tables; ClickHouse ${chMs} ms; waits for the bus ${settleMs} ms over ${settles}), generation ${genMs} ms, checks ${checkMs} ms\n`,
    );
    process.stdout.write(
      `fuzz seed ${SEED}: ${operations} operations (${acceptedOps} accepted a generated valid request), ${cases} cases in ${(elapsed / 1000).toFixed(1)} s; ${failures.length} failures\n`,
    );
    expect(failures.map((f) => `[${f.document}] ${f.operation} <${f.input}>: ${f.what}\n    ${f.request}`)).toEqual([]);
    expect(unreached).toEqual([]);
  }, 300_000);

  /** One request; an idle keep-alive socket the server closed meanwhile is retried once (undici does not). */
  async function send(method: string, c: Case): Promise<{ status: number; contentType: string; text: string } | Error> {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await fetch(`${svc.url}${c.path}`, { method, headers: c.headers, body: c.body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
      } catch (err) {
        const code = ((err as Error).cause as { code?: string } | undefined)?.code;
        if (attempt === 0 && code === 'ECONNRESET') continue;
        return new Error(`${(err as Error).message}${code ? ` (${code})` : ''}`);
      }
    }
  }

  /** The cases of one operation: valid ones, then each invalid class that has a place in it. */
  function caseGenerator(doc: OpenApiDocument, op: OpenApiOperation, seed: number) {
    const sample = <T>(arb: fc.Arbitrary<T>, n: number, salt: number) => fc.sample(arb, { seed: seed + salt, numRuns: n });
    const pathParams = op.parameters.filter((p) => p.in === 'path');
    const queryParams = op.parameters.filter((p) => p.in === 'query');
    const fillPath = (value: (name: string) => string) => op.path.replace(/\{(\w+)\}/g, (_, n: string) => value(n));
    const validPath = fillPath((n) => encodeURIComponent((n === 'id' ? idOfPath.find(([re]) => re.test(op.path))?.[1] : known[n]?.[0]) ?? randomUUID()));
    const queryArb = (minimal: boolean) =>
      fc.record(
        Object.fromEntries(
          queryParams
            .filter((p) => p.required || !minimal)
            .map((p) => [
              p.name,
              // A `metadata` parameter is a JSON object in a string: the document says string only.
              p.name === 'metadata'
                ? freeJsonObject.map((o) => JSON.stringify(o))
                : schemaArbitrary(doc, QUERY_TIME_NAME.test(p.name) ? { type: 'string', format: 'date-time' } : p.schema, { knownIds: known, minimal }, 0, p.name),
            ]),
        ),
        { requiredKeys: queryParams.filter((p) => p.required).map((p) => p.name) },
      );
    const queryString = (q: Record<string, unknown>) => {
      const usp = new URLSearchParams();
      for (const [k, v] of Object.entries(q)) {
        if (v === undefined || v === null) continue;
        for (const item of Array.isArray(v) ? v : [v]) usp.append(k, typeof item === 'object' ? JSON.stringify(item) : String(item));
      }
      const s = usp.toString();
      return s ? `?${s}` : '';
    };
    const multipart = Boolean(op.body?.contentType.startsWith('multipart/'));
    const encode = (value: unknown): { body: string | Buffer; contentType: string } => {
      if (!multipart) return { body: JSON.stringify(value), contentType: 'application/json' };
      const m = multipartBody(Object.entries((value ?? {}) as Record<string, unknown>).map(([name, data]) => ({ name, data })));
      return { body: m.body, contentType: m.contentType };
    };
    const headers = (contentType: string | undefined, withAuth = true): Record<string, string> => ({ ...(withAuth ? auth() : {}), ...(contentType ? { 'content-type': contentType } : {}) });
    // The first valid body carries only what is required (most likely to pass rules the document cannot state).
    const validBodies = op.body
      ? [...sample(schemaArbitrary(doc, op.body.schema, { knownIds: known, minimal: true }), 1, 1), ...sample(schemaArbitrary(doc, op.body.schema, { knownIds: known }), VALID_CASES - 1, 1)]
      : [];

    return {
      valid(): Case[] {
        // The first valid query string has only the required parameters.
        const queries = [...sample(queryArb(true), 1, 2), ...sample(queryArb(false), VALID_CASES - 1, 2)] as Record<string, unknown>[];
        return queries.map((q, i) => {
          const enc = op.body ? encode(validBodies[i]) : undefined;
          return { input: 'valid', path: validPath + queryString(q), headers: headers(enc?.contentType), body: enc?.body, value: validBodies[i] };
        });
      },
      invalid(accepted: unknown, max: number): Case[] {
        const base = fresh(accepted ?? validBodies[0]);
        const enc = op.body ? encode(base) : undefined;
        const withBase = (input: InputClass, path: string, h = headers(enc?.contentType)): Case => ({ input, path, headers: h, body: enc?.body });
        const out: Case[] = [];
        if (op.body) {
          BODY_CLASSES.forEach((cls, i) => {
            if (multipart && cls !== 'not-json') return; // multipart parts: the multipart suites' subject (issue 27 point 3)
            const body = invalidBody(doc, op.body!.schema, base, cls, seed + i);
            if (body !== null) out.push({ input: `body:${cls}`, path: validPath, headers: headers(enc?.contentType), body });
          });
        }
        if (pathParams.length) {
          out.push(withBase('path:random-uuid', fillPath(() => randomUUID())));
          for (const j of sample(fc.constantFrom(...JUNK_PATH), 1, 3)) out.push(withBase('path:junk', fillPath(() => j)));
        }
        if (queryParams.length) {
          const p = queryParams[Math.abs(seed) % queryParams.length];
          if (p.schema.type !== 'string' || p.schema.format || p.schema.enum) out.push(withBase('query:wrong-type', `${validPath}?${p.name}=%00not-a-value`));
          out.push(withBase('query:huge', `${validPath}?${p.name}=${'x'.repeat(8_000)}`));
          const timed = queryParams.find((q) => QUERY_TIME_NAME.test(q.name));
          if (timed) out.push(withBase('query:bad-timestamp', `${validPath}?${timed.name}=${encodeURIComponent(BAD_QUERY_TIMES[Math.abs(seed) % BAD_QUERY_TIMES.length])}`));
        }
        if (op.secured) {
          const anonymous = headers(enc?.contentType, false);
          out.push(withBase('auth:none', validPath, anonymous));
          out.push(withBase('auth:junk-key', validPath, { ...anonymous, 'x-api-key': `th_${'0'.repeat(40)}` }));
          out.push(withBase('auth:junk-bearer', validPath, { ...anonymous, authorization: 'Bearer eyJhbGciOiJub25lIn0.e30.' }));
        }
        return out.slice(0, max);
      },
    };
  }

  /** The answer against the document: no 5xx, a documented status, a body of the documented shape. */
  function checkAnswer(
    validator: ReturnType<typeof createDocumentValidator>,
    op: OpenApiOperation,
    c: Case,
    status: number,
    contentType: string,
    text: string,
    fail: (what: string) => void,
  ) {
    if (status >= 500) return fail(`${status}: ${short(text)}`);
    const documented = op.responses[String(status)] ?? op.responses[`${String(status)[0]}XX`] ?? op.responses.default;
    if (documented === undefined && !(String(status) in op.responses)) return fail(`status ${status} is not documented (documented: ${Object.keys(op.responses).join(', ')}): ${short(text)}`);
    if (status < 300 && c.input.startsWith('auth:')) return fail(`${status} without valid credentials`);
    if (status < 300 && c.input.startsWith('body:') && SCHEMA_BREAKING.has(c.input.slice(5) as InvalidClass)) return fail(`${status} for a body the document refuses`);
    if (!documented) return;
    if (!contentType.includes('json')) return fail(`${status} documented as JSON, answered ${contentType || 'no content type'}`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return fail(`${status} body is not JSON: ${short(text)}`);
    }
    const validate = validator.compile(documented);
    if (!validate(body)) fail(`${status} body does not match the document: ${JSON.stringify(validate.errors?.slice(0, 3))} in ${short(text)}`);
  }
});
