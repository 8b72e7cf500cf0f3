import { RUN_TYPES as RUN_TYPE_LIST, microsToIso, type RunType, type OtlpAnyValue, type OtlpKeyValue, type OtlpTraceRequest, type RunCreate } from '@th/contracts';
import { EventLoopPacer, parseClientJson } from '@th/platform';
import { parseDottedOrder } from '../run-merge';

type Obj = Record<string, unknown>;
type Span = NonNullable<NonNullable<NonNullable<OtlpTraceRequest['resourceSpans']>[number]['scopeSpans']>[number]['spans']>[number];

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RUN_TYPES: ReadonlySet<string> = new Set(RUN_TYPE_LIST);
const LLM_OPERATIONS = new Set(['chat', 'text_completion', 'completion', 'generate_content', 'generate']);
const AI_SDK_LLM = new Set(['ai.generateText.doGenerate', 'ai.streamText.doStream', 'ai.generateObject.doGenerate', 'ai.streamObject.doStream']);
const MAX_METADATA_VALUE = 4096;

/** The published SDK's id conventions: a trace id is a UUID as is, a span id is zero-padded into one. */
export const traceUuid = (hex: string): string => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`.toLowerCase();
export const spanUuid = (hex: string): string => {
  const p = hex.padStart(16, '0').toLowerCase();
  return `00000000-0000-0000-${p.slice(0, 4)}-${p.slice(4, 16)}`;
};

export function anyValue(v: OtlpAnyValue | undefined): unknown {
  if (!v) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) {
    const n = Number(v.intValue);
    return Number.isSafeInteger(n) ? n : String(v.intValue);
  }
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(anyValue);
  if (v.kvlistValue !== undefined) return attrsOf(v.kvlistValue.values);
  if (v.bytesValue !== undefined) return v.bytesValue;
  return null;
}

export function attrsOf(kvs: OtlpKeyValue[] | undefined): Obj {
  const out: Obj = {};
  for (const kv of kvs ?? []) out[kv.key] = anyValue(kv.value);
  return out;
}

function nanosToIso(ns: string | number | undefined): string | undefined {
  if (ns === undefined) return undefined;
  const big = BigInt(typeof ns === 'number' ? Math.trunc(ns) : ns);
  if (big <= 0n) return undefined;
  return microsToIso(Number(big / 1000n));
}

/** A string attribute holding JSON, parsed; one that is not JSON (or nests past MAX_JSON_DEPTH) stays a string. */
function parseJson(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return parseClientJson(v);
  } catch {
    return v;
  }
}

const asObject = (v: unknown, key: string): Obj => {
  const parsed = parseJson(v);
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Obj) : { [key]: parsed };
};

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const num = (v: unknown): number | undefined => {
  const n = typeof v === 'string' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
};

/** GenAI semantic-convention messages (role + typed parts) in the spec's message format. */
function genAiMessages(raw: unknown): Obj[] {
  const list = parseJson(raw);
  if (!Array.isArray(list)) return [];
  const out: Obj[] = [];
  for (const m of list) {
    if (typeof m !== 'object' || m === null) continue;
    const msg = m as Obj;
    const content: Obj[] = [];
    for (const p of Array.isArray(msg.parts) ? (msg.parts as Obj[]) : []) {
      const modality = str(p.modality);
      const media = modality === 'image' || modality === 'audio' || modality === 'video' ? modality : 'file';
      switch (p.type) {
        case 'text':
          content.push({ type: 'text', text: typeof p.content === 'string' ? p.content : JSON.stringify(p.content ?? '') });
          break;
        case 'reasoning':
          content.push({ type: 'reasoning', text: typeof p.content === 'string' ? p.content : JSON.stringify(p.content ?? '') });
          break;
        case 'tool_call':
          content.push({ type: 'tool_call', ...(p.id ? { id: String(p.id) } : {}), name: String(p.name ?? ''), args: asObject(p.arguments ?? {}, 'value') });
          break;
        case 'tool_call_response':
          out.push({ role: 'tool', tool_call_id: String(p.id ?? ''), content: [{ type: 'text', text: typeof p.response === 'string' ? p.response : JSON.stringify(p.response ?? null) }] });
          break;
        case 'blob':
          content.push({ type: media, base64: String(p.content ?? ''), ...(p.mime_type ? { mime_type: String(p.mime_type) } : {}) });
          break;
        case 'uri':
          content.push({ type: media, url: String(p.uri ?? ''), ...(p.mime_type ? { mime_type: String(p.mime_type) } : {}) });
          break;
        case 'file':
          content.push({ type: media, id: String(p.file_id ?? ''), ...(p.mime_type ? { mime_type: String(p.mime_type) } : {}) });
          break;
        default:
          content.push({ type: 'text', text: JSON.stringify(p) });
      }
    }
    if (content.length > 0 || msg.role !== 'tool') out.push({ role: String(msg.role ?? 'user'), content, ...(msg.finish_reason ? { finish_reason: msg.finish_reason } : {}) });
  }
  return out;
}

/** OpenLLMetry's indexed attributes: gen_ai.prompt.0.role / gen_ai.prompt.0.content ... */
function indexedMessages(attrs: Obj, prefix: string): Obj[] {
  const out: Obj[] = [];
  for (let i = 0; i < 1000; i++) {
    const role = attrs[`${prefix}.${i}.role`];
    const content = attrs[`${prefix}.${i}.content`];
    if (role === undefined && content === undefined) break;
    out.push({ role: String(role ?? 'user'), content: typeof content === 'string' ? content : JSON.stringify(content ?? '') });
  }
  return out;
}

function runTypeOf(name: string, attrs: Obj): RunType {
  const kind = str(attrs['langsmith.span.kind'])?.toLowerCase();
  if (kind && RUN_TYPES.has(kind)) return kind as RunType;
  const op = str(attrs['gen_ai.operation.name']);
  if (op) {
    if (LLM_OPERATIONS.has(op)) return 'llm';
    if (op === 'embeddings') return 'embedding';
    if (op === 'execute_tool') return 'tool';
    return 'chain';
  }
  if (AI_SDK_LLM.has(name) || AI_SDK_LLM.has(String(attrs['ai.operationId'] ?? ''))) return 'llm';
  if (name === 'ai.toolCall') return 'tool';
  if (attrs['gen_ai.request.model'] !== undefined || attrs['gen_ai.system'] !== undefined || attrs['gen_ai.provider.name'] !== undefined) return 'llm';
  return 'chain';
}

/** Attribute keys consumed into run fields; the others become metadata. */
const CONSUMED = new Set([
  'langsmith.span.kind', 'langsmith.trace.name', 'langsmith.trace.session_id', 'langsmith.trace.session_name', 'langsmith.span.tags', 'langsmith.span.id',
  'langsmith.trace.id', 'langsmith.span.parent_id', 'langsmith.span.dotted_order', 'langsmith.usage_metadata', 'langsmith.reference_example_id',
  'gen_ai.prompt', 'gen_ai.completion', 'gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.tool.call.arguments',
  'gen_ai.tool.call.result', 'input.value', 'output.value', 'ai.prompt.messages', 'ai.response.text',
]);

function usageOf(attrs: Obj): Obj | undefined {
  const explicit = parseJson(attrs['langsmith.usage_metadata']);
  if (explicit && typeof explicit === 'object' && !Array.isArray(explicit)) return explicit as Obj;
  const input = num(attrs['gen_ai.usage.input_tokens']) ?? num(attrs['gen_ai.usage.prompt_tokens']) ?? num(attrs['llm.token_count.prompt']);
  const output = num(attrs['gen_ai.usage.output_tokens']) ?? num(attrs['gen_ai.usage.completion_tokens']) ?? num(attrs['llm.token_count.completion']);
  if (input === undefined && output === undefined) return undefined;
  const usage: Obj = { input_tokens: input ?? 0, output_tokens: output ?? 0 };
  const total = num(attrs['gen_ai.usage.total_tokens']) ?? num(attrs['llm.usage.total_tokens']);
  if (total !== undefined) usage.total_tokens = total;
  const inDetails: Obj = {};
  const cacheRead = num(attrs['gen_ai.usage.cache_read.input_tokens']) ?? num(attrs['gen_ai.usage.cache_read_input_tokens']);
  const cacheCreation = num(attrs['gen_ai.usage.cache_creation.input_tokens']) ?? num(attrs['gen_ai.usage.cache_creation_input_tokens']);
  if (cacheRead !== undefined) inDetails.cache_read = cacheRead;
  if (cacheCreation !== undefined) inDetails.cache_creation = cacheCreation;
  const d = parseJson(attrs['gen_ai.usage.input_token_details']);
  if (d && typeof d === 'object') Object.assign(inDetails, d);
  if (Object.keys(inDetails).length > 0) usage.input_token_details = inDetails;
  const outDetails: Obj = {};
  const reasoning = num(attrs['gen_ai.usage.reasoning_tokens']) ?? num(attrs['gen_ai.usage.reasoning.output_tokens']);
  if (reasoning !== undefined) outDetails.reasoning = reasoning;
  const od = parseJson(attrs['gen_ai.usage.output_token_details']);
  if (od && typeof od === 'object') Object.assign(outDetails, od);
  if (Object.keys(outDetails).length > 0) usage.output_token_details = outDetails;
  return usage;
}

function inputsOf(attrs: Obj, events: Obj[]): Obj | undefined {
  if (attrs['gen_ai.prompt'] !== undefined && attrs['gen_ai.prompt.0.role'] === undefined) return asObject(attrs['gen_ai.prompt'], 'input');
  if (attrs['gen_ai.input.messages'] !== undefined) {
    const messages = genAiMessages(attrs['gen_ai.input.messages']);
    const sys = parseJson(attrs['gen_ai.system_instructions']);
    if (Array.isArray(sys)) messages.unshift(...genAiMessages([{ role: 'system', parts: sys }]));
    return { messages };
  }
  const indexed = indexedMessages(attrs, 'gen_ai.prompt');
  if (indexed.length > 0) return { messages: indexed };
  if (attrs['gen_ai.tool.call.arguments'] !== undefined) return asObject(attrs['gen_ai.tool.call.arguments'], 'input');
  if (attrs['input.value'] !== undefined) return asObject(attrs['input.value'], 'input');
  if (attrs['ai.prompt.messages'] !== undefined) return { messages: parseJson(attrs['ai.prompt.messages']) };
  const eventMessages = events
    .filter((e) => ['gen_ai.system.message', 'gen_ai.user.message', 'gen_ai.assistant.message', 'gen_ai.tool.message'].includes(String(e.name)))
    .map((e) => {
      const a = e.kwargs as Obj;
      return { role: String(a.role ?? String(e.name).split('.')[1]), content: typeof a.content === 'string' ? a.content : JSON.stringify(a.content ?? '') };
    });
  return eventMessages.length > 0 ? { messages: eventMessages } : undefined;
}

function outputsOf(attrs: Obj, events: Obj[]): Obj | undefined {
  if (attrs['gen_ai.completion'] !== undefined && attrs['gen_ai.completion.0.role'] === undefined) return asObject(attrs['gen_ai.completion'], 'output');
  if (attrs['gen_ai.output.messages'] !== undefined) return { messages: genAiMessages(attrs['gen_ai.output.messages']) };
  const indexed = indexedMessages(attrs, 'gen_ai.completion');
  if (indexed.length > 0) return { messages: indexed };
  if (attrs['gen_ai.tool.call.result'] !== undefined) return asObject(attrs['gen_ai.tool.call.result'], 'output');
  if (attrs['output.value'] !== undefined) return asObject(attrs['output.value'], 'output');
  if (attrs['ai.response.text'] !== undefined) return { messages: [{ role: 'assistant', content: String(attrs['ai.response.text']) }] };
  const choices = events.filter((e) => e.name === 'gen_ai.choice').map((e) => {
    const a = e.kwargs as Obj;
    const m = parseJson(a.message);
    return m && typeof m === 'object' ? m : { role: 'assistant', content: typeof a.content === 'string' ? a.content : JSON.stringify(a.content ?? '') };
  });
  return choices.length > 0 ? { messages: choices } : undefined;
}

export interface OtlpMapOptions {
  /** The `Langsmith-Project` header: the project for spans that do not name one. */
  project?: string;
}

/** Every span of the request as a complete run (one POST each: a span arrives once, finished). */
export function spansToRuns(req: OtlpTraceRequest, opts: OtlpMapOptions = {}): RunCreate[] {
  return [...eachRun(req, opts)];
}

/** spansToRuns giving the event loop way between slices (a span's attributes may hold JSON to parse). */
export async function spansToRunsPaced(req: OtlpTraceRequest, opts: OtlpMapOptions = {}, pacer = new EventLoopPacer()): Promise<RunCreate[]> {
  const runs: RunCreate[] = [];
  for (const run of eachRun(req, opts)) {
    runs.push(run);
    if (pacer.due()) await pacer.yield();
  }
  return runs;
}

function* eachRun(req: OtlpTraceRequest, opts: OtlpMapOptions): Generator<RunCreate> {
  for (const rs of req.resourceSpans ?? []) {
    const resource = attrsOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) yield spanToRun(span, resource, ss.scope, opts);
    }
  }
}

function spanToRun(span: Span, resource: Obj, scope: { name?: string; version?: string } | undefined, opts: OtlpMapOptions): RunCreate {
  const attrs = attrsOf(span.attributes);
  const id = UUID_RE.test(String(attrs['langsmith.span.id'] ?? '')) ? String(attrs['langsmith.span.id']).toLowerCase() : spanUuid(span.spanId);
  const traceId = UUID_RE.test(String(attrs['langsmith.trace.id'] ?? '')) ? String(attrs['langsmith.trace.id']).toLowerCase() : traceUuid(span.traceId);
  const parent = UUID_RE.test(String(attrs['langsmith.span.parent_id'] ?? ''))
    ? String(attrs['langsmith.span.parent_id']).toLowerCase()
    : span.parentSpanId
      ? spanUuid(span.parentSpanId)
      : undefined;
  const start = nanosToIso(span.startTimeUnixNano) ?? microsToIso(Date.now() * 1000);
  const end = nanosToIso(span.endTimeUnixNano);
  const events: Obj[] = (span.events ?? []).map((e) => ({ name: e.name, time: nanosToIso(e.timeUnixNano) ?? start, kwargs: attrsOf(e.attributes) }));
  const msToFirstChunk = num(attrs['ai.response.msToFirstChunk']) ?? num(attrs['gen_ai.response.time_to_first_chunk']);
  if (msToFirstChunk !== undefined && !events.some((e) => e.name === 'new_token')) {
    events.push({ name: 'new_token', time: microsToIso(Number(BigInt(span.startTimeUnixNano) / 1000n) + Math.round(msToFirstChunk * 1000)) });
  }

  const metadata: Obj = {};
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith('langsmith.metadata.')) metadata[k.slice('langsmith.metadata.'.length)] = parseJson(v);
    else if (!CONSUMED.has(k) && !k.startsWith('gen_ai.prompt.') && !k.startsWith('gen_ai.completion.') && !k.startsWith('gen_ai.usage.')) {
      if (typeof v !== 'string' || v.length <= MAX_METADATA_VALUE) metadata[k] = v;
    }
  }
  const provider = str(attrs['gen_ai.provider.name']) ?? str(attrs['gen_ai.system']);
  const model = str(attrs['gen_ai.response.model']) ?? str(attrs['gen_ai.request.model']);
  if (provider && metadata.ls_provider === undefined) metadata.ls_provider = provider;
  if (model && metadata.ls_model_name === undefined) metadata.ls_model_name = model;
  const usage = usageOf(attrs);
  if (usage) metadata.usage_metadata = usage;
  if (resource['service.name'] !== undefined) metadata['service.name'] = resource['service.name'];

  const invocation: Obj = {};
  for (const k of ['temperature', 'max_tokens', 'top_p', 'top_k', 'frequency_penalty', 'presence_penalty', 'seed', 'stop_sequences']) {
    if (attrs[`gen_ai.request.${k}`] !== undefined) invocation[k] = attrs[`gen_ai.request.${k}`];
  }
  if (model) invocation.model = str(attrs['gen_ai.request.model']) ?? model;

  let error: string | undefined;
  if (span.status?.code === 2) {
    const exception = events.find((e) => e.name === 'exception')?.kwargs as Obj | undefined;
    error = str(span.status.message) ?? (exception ? `${String(exception['exception.type'] ?? 'Error')}: ${String(exception['exception.message'] ?? '')}` : 'error');
  }
  const tags = str(attrs['langsmith.span.tags'])
    ?.split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const sessionId = str(attrs['langsmith.trace.session_id']);
  const dotted = str(attrs['langsmith.span.dotted_order']);
  const parsedDotted = dotted ? parseDottedOrder(dotted) : null;
  const refExample = str(attrs['langsmith.reference_example_id']);

  const run: RunCreate = {
    id,
    trace_id: traceId,
    name: (str(attrs['langsmith.trace.name']) ?? span.name).slice(0, 1024) || 'span',
    run_type: runTypeOf(span.name, attrs),
    start_time: start,
    end_time: end ?? null,
    inputs: inputsOf(attrs, events) ?? {},
    outputs: outputsOf(attrs, events) ?? null,
    extra: {
      metadata,
      ...(Object.keys(invocation).length > 0 ? { invocation_params: invocation } : {}),
      otel: {
        trace_id: span.traceId,
        span_id: span.spanId,
        ...(span.parentSpanId ? { parent_span_id: span.parentSpanId } : {}),
        kind: span.kind ?? 0,
        scope: scope ? { name: scope.name ?? '', version: scope.version ?? '' } : null,
        resource,
        ...(span.links && span.links.length > 0 ? { links: span.links.map((l) => ({ trace_id: l.traceId, span_id: l.spanId })) } : {}),
      },
    },
    events,
    error: error ?? null,
    tags: tags ?? null,
    parent_run_id: parent ?? null,
    dotted_order: parsedDotted && parsedDotted.ids[parsedDotted.ids.length - 1] === id ? dotted : null,
    reference_example_id: refExample && UUID_RE.test(refExample) ? refExample.toLowerCase() : null,
  };
  if (sessionId && UUID_RE.test(sessionId)) run.session_id = sessionId.toLowerCase();
  else {
    const name = str(attrs['langsmith.trace.session_name']) ?? opts.project;
    if (name) run.session_name = name.slice(0, 1024);
  }
  return run;
}
