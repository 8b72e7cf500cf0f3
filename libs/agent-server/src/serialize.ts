interface MessageLike {
  content: unknown;
  getType?: () => string;
  _getType?: () => string;
  [key: string]: unknown;
}

function isMessage(v: unknown): v is MessageLike {
  return !!v && typeof v === 'object' && 'content' in v && (typeof (v as MessageLike).getType === 'function' || typeof (v as MessageLike)._getType === 'function');
}

const MESSAGE_FIELDS = ['id', 'name', 'additional_kwargs', 'response_metadata', 'tool_calls', 'invalid_tool_calls', 'usage_metadata', 'tool_call_id', 'artifact', 'status'];

/** Graph values as the published client reads them: LangChain messages become {type, content, id, ...}. */
export function toWire(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth > 64) return null;
  if (isMessage(value)) {
    const type = value.getType ? value.getType() : value._getType!();
    const out: Record<string, unknown> = { type, content: toWire(value.content, depth + 1) };
    for (const f of MESSAGE_FIELDS) if (value[f] !== undefined) out[f] = toWire(value[f], depth + 1);
    return out;
  }
  if (Array.isArray(value)) return value.map((v) => toWire(v, depth + 1));
  if (value instanceof Date) return value.toISOString();
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return toWire((value as { toJSON(): unknown }).toJSON(), depth + 1);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== undefined && typeof v !== 'function') out[k] = toWire(v, depth + 1);
  return out;
}
