import { LLM_CONTENT_TYPES, LLM_MESSAGE_ROLES, type LlmContentItem, type LlmFormat, type LlmMessage } from '@th/contracts';

type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const SPEC_ROLES: ReadonlySet<string> = new Set(LLM_MESSAGE_ROLES);
const SPEC_TYPES: ReadonlySet<string> = new Set(LLM_CONTENT_TYPES);
const ANTHROPIC_TYPES = new Set([
  'tool_use',
  'tool_result',
  'thinking',
  'redacted_thinking',
  'server_tool_use',
  'web_search_tool_result',
  'code_execution_tool_result',
  'mcp_tool_use',
  'mcp_tool_result',
  'document',
  'search_result',
]);
const OPENAI_PART_TYPES = new Set(['image_url', 'input_audio', 'refusal', 'input_text', 'output_text']);

/** The list of messages a payload carries: `messages`, a single message, or an OpenAI/Anthropic response. */
function messagesOf(payload: unknown): unknown[] | null {
  if (!isObj(payload)) return null;
  if (Array.isArray(payload.messages)) return payload.messages;
  if (Array.isArray(payload.choices)) return payload.choices.map((c) => (isObj(c) ? (c.message ?? c.delta ?? c) : c));
  if (typeof payload.role === 'string' && 'content' in payload) return [payload];
  return null;
}

/** Which of the three formats a run's inputs or outputs use (heuristic, by the markers only one format has). */
export function detectFormat(payload: unknown): LlmFormat {
  if (!isObj(payload)) return 'unknown';
  if (Array.isArray(payload.choices) || payload.object === 'chat.completion') return 'openai';
  if (payload.type === 'message' && payload.role === 'assistant' && Array.isArray(payload.content)) return 'anthropic';
  if ('stop_reason' in payload && Array.isArray(payload.content)) return 'anthropic';
  const messages = messagesOf(payload);
  if (!messages) return 'unknown';
  if (payload.system !== undefined && !messages.some((m) => isObj(m) && m.role === 'system')) return 'anthropic';
  let openai = false;
  let anthropic = false;
  let stringContent = false;
  let specOnly = false;
  for (const m of messages) {
    if (!isObj(m)) continue;
    if (Array.isArray(m.tool_calls) || m.role === 'developer' || m.role === 'function' || typeof m.function_call === 'object') openai = true;
    if (m.role === 'reasoning') specOnly = true;
    if (typeof m.content === 'string') stringContent = true;
    if (Array.isArray(m.content)) {
      for (const item of m.content) {
        if (!isObj(item) || typeof item.type !== 'string') continue;
        if (ANTHROPIC_TYPES.has(item.type)) anthropic = true;
        else if (OPENAI_PART_TYPES.has(item.type)) openai = true;
        else if (item.type === 'image' && isObj(item.source)) anthropic = true;
        else if (SPEC_TYPES.has(item.type) && item.type !== 'text' && item.type !== 'image') specOnly = true;
      }
    }
  }
  if (specOnly && !openai && !anthropic) return 'spec';
  if (anthropic) return 'anthropic';
  if (openai || stringContent) return 'openai';
  // Messages whose content is a list of typed items and nothing else: the spec's own format.
  return 'spec';
}

const text = (t: unknown): LlmContentItem => ({ type: 'text', text: typeof t === 'string' ? t : JSON.stringify(t) });

function parseArgs(raw: unknown): Obj {
  if (isObj(raw)) return raw;
  if (typeof raw === 'string') {
    try {
      const v: unknown = JSON.parse(raw);
      return isObj(v) ? v : { value: v };
    } catch {
      return { raw };
    }
  }
  return {};
}

function dataUrl(url: string): { base64?: string; mime_type?: string; url?: string } {
  const m = /^data:([^;,]+)?(;base64)?,(.*)$/s.exec(url);
  if (m && m[2]) return { base64: m[3], ...(m[1] ? { mime_type: m[1] } : {}) };
  return { url };
}

function openaiPart(p: unknown): LlmContentItem {
  if (!isObj(p)) return text(p);
  switch (p.type) {
    case 'text':
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: String(p.text ?? '') };
    case 'refusal':
      return { type: 'text', text: String(p.refusal ?? '') };
    case 'image_url': {
      const iu = isObj(p.image_url) ? p.image_url : { url: p.image_url };
      return { type: 'image', ...dataUrl(String(iu.url ?? '')) };
    }
    case 'input_audio': {
      const a = isObj(p.input_audio) ? p.input_audio : {};
      return { type: 'audio', base64: String(a.data ?? ''), ...(a.format ? { mime_type: `audio/${String(a.format)}` } : {}) };
    }
    case 'file': {
      const f = isObj(p.file) ? p.file : {};
      return {
        type: 'file',
        ...(f.file_data ? dataUrl(String(f.file_data)) : {}),
        ...(f.file_id ? { id: String(f.file_id) } : {}),
      };
    }
    default:
      return { ...p, type: String(p.type ?? 'text') };
  }
}

function openaiMessage(m: unknown): LlmMessage {
  if (!isObj(m)) return { role: 'user', content: [text(m)] };
  const role = m.role === 'developer' ? 'system' : m.role === 'function' ? 'tool' : String(m.role ?? 'assistant');
  const content: LlmContentItem[] = [];
  if (typeof m.reasoning_content === 'string') content.push({ type: 'reasoning', text: m.reasoning_content });
  if (typeof m.content === 'string') content.push(text(m.content));
  else if (Array.isArray(m.content)) content.push(...m.content.map(openaiPart));
  if (typeof m.refusal === 'string' && m.refusal) content.push({ type: 'text', text: m.refusal });
  for (const tc of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
    if (!isObj(tc)) continue;
    const fn = isObj(tc.function) ? tc.function : {};
    content.push({ type: 'tool_call', ...(tc.id ? { id: String(tc.id) } : {}), name: String(fn.name ?? ''), args: parseArgs(fn.arguments) });
  }
  if (isObj(m.function_call)) content.push({ type: 'tool_call', name: String(m.function_call.name ?? ''), args: parseArgs(m.function_call.arguments) });
  const out: LlmMessage = { role, content };
  if (typeof m.tool_call_id === 'string') out.tool_call_id = m.tool_call_id;
  return out;
}

function anthropicSource(s: unknown): Obj {
  if (!isObj(s)) return {};
  if (s.type === 'base64') return { base64: s.data, ...(s.media_type ? { mime_type: s.media_type } : {}) };
  if (s.type === 'url') return { url: s.url };
  if (s.type === 'file') return { id: s.file_id };
  if (s.type === 'text') return { base64: Buffer.from(String(s.data ?? '')).toString('base64'), mime_type: s.media_type ?? 'text/plain' };
  return {};
}

/** One Anthropic message may become several: tool_result blocks are tool messages in the spec's format. */
function anthropicMessages(m: unknown): LlmMessage[] {
  if (!isObj(m)) return [{ role: 'user', content: [text(m)] }];
  const role = String(m.role ?? 'assistant');
  if (typeof m.content === 'string') return [{ role, content: [text(m.content)] }];
  const content: LlmContentItem[] = [];
  const toolMessages: LlmMessage[] = [];
  for (const b of Array.isArray(m.content) ? m.content : []) {
    if (!isObj(b)) continue;
    switch (b.type) {
      case 'text':
        content.push({ type: 'text', text: String(b.text ?? ''), ...(Array.isArray(b.citations) ? { annotations: b.citations } : {}) });
        break;
      case 'thinking':
        content.push({ type: 'reasoning', text: String(b.thinking ?? '') });
        break;
      case 'redacted_thinking':
        content.push({ type: 'reasoning', text: '', extras: { redacted: true, data: b.data } });
        break;
      case 'image':
        content.push({ type: 'image', ...anthropicSource(b.source) });
        break;
      case 'document':
        content.push({ type: 'file', ...anthropicSource(b.source) });
        break;
      case 'tool_use':
        content.push({ type: 'tool_call', id: String(b.id ?? ''), name: String(b.name ?? ''), args: parseArgs(b.input) });
        break;
      case 'server_tool_use':
      case 'mcp_tool_use':
        content.push({ type: 'server_tool_call', id: String(b.id ?? ''), name: String(b.name ?? ''), args: parseArgs(b.input) });
        break;
      case 'tool_result': {
        const inner = typeof b.content === 'string' ? [text(b.content)] : Array.isArray(b.content) ? anthropicMessages({ role: 'tool', content: b.content })[0].content : [];
        toolMessages.push({ role: 'tool', tool_call_id: String(b.tool_use_id ?? ''), content: inner });
        break;
      }
      default:
        if (typeof b.type === 'string' && b.type.endsWith('_tool_result')) {
          const isError = isObj(b.content) && typeof b.content.type === 'string' && b.content.type.endsWith('_error');
          content.push({ type: 'server_tool_result', tool_call_id: String(b.tool_use_id ?? ''), status: isError ? 'error' : 'success', output: b.content });
        } else {
          content.push({ ...b, type: String(b.type ?? 'text') });
        }
    }
  }
  const out: LlmMessage[] = [...toolMessages];
  if (content.length > 0 || toolMessages.length === 0) out.push({ role, content });
  return out;
}

function specMessage(m: unknown): LlmMessage {
  if (!isObj(m)) return { role: 'user', content: [text(m)] };
  const content = Array.isArray(m.content) ? (m.content.filter(isObj) as LlmContentItem[]) : typeof m.content === 'string' ? [text(m.content)] : [];
  return { ...(m as Obj), role: String(m.role ?? ''), content } as LlmMessage;
}

/** The payload's messages in the spec's format (the one way a client renders any of the three formats). */
export function normalizeMessages(payload: unknown, format: LlmFormat = detectFormat(payload)): LlmMessage[] {
  if (!isObj(payload)) return [];
  if (format === 'anthropic') {
    const list = Array.isArray(payload.messages) ? payload.messages : [payload];
    const out: LlmMessage[] = [];
    if (payload.system !== undefined) {
      const sys = typeof payload.system === 'string' ? [text(payload.system)] : anthropicMessages({ role: 'system', content: payload.system })[0].content;
      out.push({ role: 'system', content: sys });
    }
    for (const m of list) out.push(...anthropicMessages(m));
    return out;
  }
  const messages = messagesOf(payload) ?? [];
  if (format === 'openai') return messages.map(openaiMessage);
  if (format === 'spec') return messages.map(specMessage);
  return [];
}

export { SPEC_ROLES, SPEC_TYPES };
