import type { Example } from '@th/contracts';

/** An OpenAI chat fine-tuning message. */
export interface FtMessage {
  role: string;
  content: unknown;
  [k: string]: unknown;
}

const ROLE_OF_TYPE: Record<string, string> = { human: 'user', user: 'user', ai: 'assistant', assistant: 'assistant', system: 'system', tool: 'tool', function: 'function' };
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A message as the SDKs store it: OpenAI's {role, content}, LangChain's {type, data: {content}} or {type, content}. */
function asMessage(v: unknown): FtMessage | null {
  if (!isObject(v)) return null;
  if (typeof v.role === 'string' && 'content' in v) return v as FtMessage;
  const data = isObject(v.data) ? v.data : v;
  const type = typeof v.type === 'string' ? v.type : typeof data.type === 'string' ? data.type : undefined;
  const role = type === undefined ? undefined : ROLE_OF_TYPE[type];
  if (!role || !('content' in data)) return null;
  return { role, content: data.content };
}

function asMessages(v: unknown): FtMessage[] | null {
  if (!Array.isArray(v) || v.length === 0) return null;
  // A batch of conversations ([[...]]): the first one.
  const list: unknown[] = Array.isArray(v[0]) ? (v[0] as unknown[]) : v;
  const out = list.map(asMessage);
  return out.every((m): m is FtMessage => m !== null) ? out : null;
}

const text = (v: Record<string, unknown> | null): string => {
  const values = Object.values(v ?? {});
  return values.length === 1 && typeof values[0] === 'string' ? values[0] : JSON.stringify(v ?? {});
};

/**
 * One example in OpenAI's chat fine-tuning form: the input messages (inputs.messages or inputs.input when they
 * are messages, else one user message with the inputs) then the reference answer (outputs.output, outputs.message,
 * outputs.generations[0] when a message, else one assistant message with the outputs).
 */
export function openAiFineTuningRecord(e: Pick<Example, 'inputs' | 'outputs'>): { messages: FtMessage[] } {
  const inputs = e.inputs ?? {};
  const input = asMessages(inputs.messages) ?? asMessages(inputs.input) ?? [{ role: 'user', content: text(inputs) }];
  const outputs = e.outputs ?? null;
  const candidates: unknown[] = outputs ? [outputs.output, outputs.message, Array.isArray(outputs.generations) ? (outputs.generations as unknown[])[0] : undefined] : [];
  const reply = candidates.map((c) => asMessage(isObject(c) && isObject(c.message) ? c.message : c)).find((m) => m !== null);
  return { messages: [...input, ...(outputs ? [reply ?? { role: 'assistant', content: text(outputs) }] : [])] };
}
