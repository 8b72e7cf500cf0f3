/**
 * OTLP benchmark: spans per second end to end (acknowledged, then visible to a query) through
 * POST /otel/v1/traces with OTLP protobuf bodies, against the same spans sent as runs to the JSON
 * POST /runs/batch path, in one run on one service. OTLP/JSON is measured too. Each span is a GenAI
 * span (~1 KB: model, usage, input and output messages); traces hold one chain span and four LLM spans.
 * Besides wall-clock rates it reports spans per CPU-second of the service process, which other load
 * on a shared machine does not skew.
 * The /runs/batch bodies are the server's own mapping of those spans (spansToRuns), so both paths
 * write the same runs.
 *
 *   npm run build && node scripts/run.js bench/otel/main.js [--spans 50000] [--repeat 3] [--concurrency 8] [--batch 100]
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OtlpTraceRequest } from '@th/contracts';
import { otlpTypes, spansToRuns } from '@th/ingest';
import { startAppProcess } from '@th/testing';
import { median, round } from '../lib/stats';

interface Args {
  spans: number;
  repeat: number;
  concurrency: number;
  batch: number;
}

function parseArgs(): Args {
  const a = process.argv.slice(2);
  const get = (k: string, d: string) => {
    const i = a.indexOf(`--${k}`);
    return i >= 0 ? a[i + 1] : d;
  };
  return { spans: Number(get('spans', '50000')), repeat: Number(get('repeat', '3')), concurrency: Number(get('concurrency', '8')), batch: Number(get('batch', '100')) };
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
type JsonSpan = NonNullable<NonNullable<NonNullable<OtlpTraceRequest['resourceSpans']>[number]['scopeSpans']>[number]['spans']>[number];
const kv = (key: string, v: string | number) => ({ key, value: typeof v === 'string' ? { stringValue: v } : Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v } });

/** n spans in OTLP/JSON form: traces of one chain span and four GenAI chat spans. */
function makeSpans(n: number, base: number): JsonSpan[] {
  const spans: JsonSpan[] = [];
  let traceId = '';
  let rootId = '';
  for (let i = 0; i < n; i++) {
    const start = BigInt(base + i) * 1_000_000n;
    if (i % 5 === 0) {
      traceId = hex(16);
      rootId = hex(8);
      spans.push({ traceId, spanId: rootId, name: 'invoke_agent bench', kind: 1, startTimeUnixNano: String(start), endTimeUnixNano: String(start + 900_000_000n), attributes: [kv('gen_ai.operation.name', 'invoke_agent'), kv('gen_ai.agent.name', 'bench')] });
      continue;
    }
    const question = `Question ${i}: ${'what is the weather like today in the city of Paris '.repeat(4)}`;
    const answer = `Answer ${i}: ${'it is sunny with a light breeze and a few clouds '.repeat(4)}`;
    spans.push({
      traceId,
      spanId: hex(8),
      parentSpanId: rootId,
      name: 'chat gpt-4o-mini',
      kind: 3,
      startTimeUnixNano: String(start + 1_000_000n),
      endTimeUnixNano: String(start + 400_000_000n),
      attributes: [
        kv('gen_ai.operation.name', 'chat'),
        kv('gen_ai.provider.name', 'openai'),
        kv('gen_ai.request.model', 'gpt-4o-mini'),
        kv('gen_ai.request.temperature', 0.5),
        kv('gen_ai.usage.input_tokens', 120 + (i % 50)),
        kv('gen_ai.usage.output_tokens', 40 + (i % 20)),
        kv('gen_ai.input.messages', JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: question }] }])),
        kv('gen_ai.output.messages', JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: answer }], finish_reason: 'stop' }])),
      ],
      events: [{ name: 'new_token', timeUnixNano: String(start + 150_000_000n) }],
    });
  }
  return spans;
}

const request = (spans: JsonSpan[]): OtlpTraceRequest => ({
  resourceSpans: [{ resource: { attributes: [kv('service.name', 'bench')] }, scopeSpans: [{ scope: { name: 'bench', version: '1' }, spans }] }],
});

/** OTLP/JSON to the protobuf object form protobufjs encodes (ids as bytes). */
function protoBody(spans: JsonSpan[]): Buffer {
  const { request: type } = otlpTypes();
  const obj = request(spans.map((s) => ({ ...s, traceId: Buffer.from(s.traceId, 'hex'), spanId: Buffer.from(s.spanId, 'hex'), parentSpanId: s.parentSpanId ? Buffer.from(s.parentSpanId, 'hex') : undefined }) as unknown as JsonSpan));
  return Buffer.from(type.encode(type.fromObject(obj)).finish());
}

interface Path {
  name: string;
  path: string;
  contentType: string;
  bodies: (Buffer | string)[];
}

let retries = 0;

async function sendAll(url: string, apiKey: string, p: Path, concurrency: number, project: string): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    for (;;) {
      const k = next++;
      if (k >= p.bodies.length) return;
      const body = p.bodies[k];
      const send = () =>
        fetch(`${url}${p.path}`, {
          method: 'POST',
          headers: { 'x-api-key': apiKey, 'content-type': p.contentType, 'langsmith-project': project },
          body: typeof body === 'string' ? body : new Uint8Array(body),
        });
      // A kept-alive socket the server closed at the same moment fails the fetch: resend, as exporters do
      // (a resent batch merges into the same runs).
      let res: Response | undefined;
      for (let attempt = 0; !res; attempt++) {
        try {
          res = await send();
        } catch (err) {
          if (attempt >= 3) throw err;
          retries++;
        }
      }
      await res.arrayBuffer();
      if (res.status >= 300) throw new Error(`${p.name} batch ${k} answered ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return performance.now() - t0;
}

async function visible(url: string, apiKey: string, project: string, count: number): Promise<number> {
  const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
  let session: string | undefined;
  for (let i = 0; i < 6000; i++) {
    if (!session) {
      const r = await fetch(`${url}/sessions?name=${encodeURIComponent(project)}`, { headers });
      session = ((await r.json()) as { id: string }[])[0]?.id;
    }
    if (session) {
      const r = await fetch(`${url}/runs/stats`, { method: 'POST', headers, body: JSON.stringify({ session: [session] }) });
      const s = (await r.json()) as { run_count: number };
      if (s.run_count >= count) return performance.now();
    }
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`${project}: runs not visible after 5 minutes`);
}

/**
 * CPU seconds the service process has used (user + system, from /proc): the machine is shared, so
 * spans per service-CPU-second compares the paths without the noise of other processes' load.
 */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

async function main(): Promise<void> {
  const args = parseArgs();
  const dir = mkdtempSync(join(tmpdir(), 'th-bench-otel-'));
  chmodSync(dir, 0o755); // embedded PostgreSQL's initdb runs as the postgres user
  const apiKey = `th_bench_${randomBytes(8).toString('hex')}`;
  const svc = await startAppProcess('standalone', { DATA_DIR: join(dir, 'data'), BOOTSTRAP_API_KEY: apiKey, PRINT_BANNER: 'false' });
  const results: Record<string, number>[] = [];
  try {
    for (let round_ = 0; round_ < args.repeat; round_++) {
      const out: Record<string, number> = {};
      const paths: Path[] = [];
      const base = Date.UTC(2026, 10, 1) + round_ * 10_000_000;
      // Fresh spans per path (ids must not repeat), built before any clock starts.
      for (const name of ['otlp_proto', 'json_batch', 'otlp_json']) {
        const spans = makeSpans(args.spans, base);
        const chunks: JsonSpan[][] = [];
        for (let i = 0; i < spans.length; i += args.batch) chunks.push(spans.slice(i, i + args.batch));
        if (name === 'otlp_proto') paths.push({ name, path: '/otel/v1/traces', contentType: 'application/x-protobuf', bodies: chunks.map(protoBody) });
        else if (name === 'otlp_json') paths.push({ name, path: '/otel/v1/traces', contentType: 'application/json', bodies: chunks.map((c) => JSON.stringify(request(c))) });
        else paths.push({ name, path: '/runs/batch', contentType: 'application/json', bodies: chunks.map((c) => JSON.stringify({ post: spansToRuns(request(c)) })) });
      }
      // Alternate the order between rounds so neither path always runs on a warmer service.
      const order = round_ % 2 === 0 ? paths : [...paths].reverse();
      for (const p of order) {
        const project = `bench-${p.name}-${round_}-${hex(3)}`;
        if (p.name === 'json_batch') p.bodies = p.bodies.map((b) => JSON.stringify({ post: (JSON.parse(String(b)) as { post: Record<string, unknown>[] }).post.map((r) => ({ ...r, session_name: project })) }));
        const bytes = p.bodies.reduce((s, b) => s + (typeof b === 'string' ? Buffer.byteLength(b) : b.length), 0);
        const cpu0 = cpuSeconds(svc.child.pid!);
        const t0 = performance.now();
        const sendMs = await sendAll(svc.url, apiKey, p, args.concurrency, project);
        const at = await visible(svc.url, apiKey, project, args.spans);
        out[`${p.name}_spans_per_s`] = Math.round(args.spans / ((at - t0) / 1000));
        out[`${p.name}_spans_per_cpu_s`] = Math.round(args.spans / (cpuSeconds(svc.child.pid!) - cpu0));
        out[`${p.name}_ack_spans_per_s`] = Math.round(args.spans / (sendMs / 1000));
        out[`${p.name}_bytes_per_span`] = Math.round(bytes / args.spans);
      }
      out.resent_batches = retries;
      retries = 0;
      out.ratio_proto_to_json_batch = round(out.otlp_proto_spans_per_s / out.json_batch_spans_per_s, 3);
      out.ratio_otlp_json_to_json_batch = round(out.otlp_json_spans_per_s / out.json_batch_spans_per_s, 3);
      out.cpu_ratio_proto_to_json_batch = round(out.otlp_proto_spans_per_cpu_s / out.json_batch_spans_per_cpu_s, 3);
      out.cpu_ratio_otlp_json_to_json_batch = round(out.otlp_json_spans_per_cpu_s / out.json_batch_spans_per_cpu_s, 3);
      process.stdout.write(`${JSON.stringify({ round: round_, ...out })}\n`);
      results.push(out);
    }
  } catch (err) {
    process.stderr.write(`service log (tail):\n${svc.log().slice(-3000)}\n`);
    throw err;
  } finally {
    await svc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const keys = Object.keys(results[0]);
  const med = Object.fromEntries(keys.map((k) => [k, median(results.map((r) => r[k]))]));
  process.stdout.write(`${JSON.stringify({ spans: args.spans, repeat: args.repeat, concurrency: args.concurrency, batch: args.batch, median: med })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
