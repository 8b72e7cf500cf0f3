import type { ValidationErrorItem } from '@th/contracts';
import { isObj, SPEC_ROLES, SPEC_TYPES } from './format';

type Loc = (string | number)[];

const MEDIA_TYPES = new Set(['image', 'file', 'audio', 'video']);

function requireString(item: Record<string, unknown>, field: string, loc: Loc, out: ValidationErrorItem[]): void {
  if (typeof item[field] !== 'string') out.push({ loc: [...loc, field], msg: `Field required: ${field} (string)`, type: item[field] === undefined ? 'missing' : 'string_type' });
}

function optionalString(item: Record<string, unknown>, field: string, loc: Loc, out: ValidationErrorItem[]): void {
  if (item[field] !== undefined && item[field] !== null && typeof item[field] !== 'string') out.push({ loc: [...loc, field], msg: `${field} should be a string`, type: 'string_type' });
}

function requireObject(item: Record<string, unknown>, field: string, loc: Loc, out: ValidationErrorItem[]): void {
  if (!isObj(item[field])) out.push({ loc: [...loc, field], msg: `Field required: ${field} (object)`, type: item[field] === undefined ? 'missing' : 'dict_type' });
}

function validateItem(item: unknown, loc: Loc, out: ValidationErrorItem[]): void {
  if (!isObj(item)) {
    out.push({ loc, msg: 'Content item should be an object', type: 'dict_type' });
    return;
  }
  if (typeof item.type !== 'string' || !SPEC_TYPES.has(item.type)) {
    out.push({ loc: [...loc, 'type'], msg: `Unknown content type ${JSON.stringify(item.type)}; expected one of ${[...SPEC_TYPES].join(', ')}`, type: 'literal_error' });
    return;
  }
  switch (item.type) {
    case 'text':
      requireString(item, 'text', loc, out);
      if (item.annotations !== undefined && !Array.isArray(item.annotations)) out.push({ loc: [...loc, 'annotations'], msg: 'annotations should be an array', type: 'list_type' });
      if (item.extras !== undefined && !isObj(item.extras)) out.push({ loc: [...loc, 'extras'], msg: 'extras should be an object', type: 'dict_type' });
      break;
    case 'reasoning':
      requireString(item, 'text', loc, out);
      if (item.extras !== undefined && !isObj(item.extras)) out.push({ loc: [...loc, 'extras'], msg: 'extras should be an object', type: 'dict_type' });
      break;
    case 'tool_call':
      requireObject(item, 'args', loc, out);
      optionalString(item, 'name', loc, out);
      optionalString(item, 'id', loc, out);
      break;
    case 'server_tool_call':
      requireString(item, 'id', loc, out);
      requireString(item, 'name', loc, out);
      requireObject(item, 'args', loc, out);
      break;
    case 'server_tool_result':
      requireString(item, 'tool_call_id', loc, out);
      optionalString(item, 'id', loc, out);
      if (item.status !== 'success' && item.status !== 'error') {
        out.push({ loc: [...loc, 'status'], msg: 'Field required: status, one of success, error', type: item.status === undefined ? 'missing' : 'literal_error' });
      }
      break;
    default:
      if (MEDIA_TYPES.has(item.type)) {
        for (const f of ['url', 'base64', 'id', 'mime_type']) optionalString(item, f, loc, out);
        // base64 is marked required; content stored elsewhere is named by url or id instead.
        if (item.base64 === undefined && item.url === undefined && item.id === undefined) {
          out.push({ loc: [...loc, 'base64'], msg: `Field required: base64 (or url, or id) for ${item.type} content`, type: 'missing' });
        }
      }
  }
}

/**
 * Checks messages against the spec's message format. `messages` are the run's input messages followed
 * by its output messages, so an output tool message may answer a tool call made in the inputs.
 */
export function validateSpecMessages(groups: { loc: Loc; messages: unknown }[]): ValidationErrorItem[] {
  const out: ValidationErrorItem[] = [];
  const toolCallIds = new Set<string>();
  for (const { loc, messages } of groups) {
    if (!Array.isArray(messages)) {
      out.push({ loc, msg: 'Field required: messages (array)', type: messages === undefined ? 'missing' : 'list_type' });
      continue;
    }
    messages.forEach((m, i) => {
      const mloc = [...loc, i];
      if (!isObj(m)) {
        out.push({ loc: mloc, msg: 'Message should be an object', type: 'dict_type' });
        return;
      }
      if (typeof m.role !== 'string') out.push({ loc: [...mloc, 'role'], msg: 'Field required: role', type: 'missing' });
      else if (!SPEC_ROLES.has(m.role)) out.push({ loc: [...mloc, 'role'], msg: `Unknown role ${JSON.stringify(m.role)}; expected one of ${[...SPEC_ROLES].join(', ')}`, type: 'literal_error' });
      if (!Array.isArray(m.content)) out.push({ loc: [...mloc, 'content'], msg: 'Field required: content (array of typed items)', type: m.content === undefined ? 'missing' : 'list_type' });
      else m.content.forEach((item, j) => validateItem(item, [...mloc, 'content', j], out));
      if (m.tool_call_id !== undefined) {
        if (m.role !== 'tool') out.push({ loc: [...mloc, 'tool_call_id'], msg: 'tool_call_id is valid only when role is tool', type: 'value_error' });
        else if (typeof m.tool_call_id !== 'string' || !toolCallIds.has(m.tool_call_id)) {
          out.push({ loc: [...mloc, 'tool_call_id'], msg: `tool_call_id ${JSON.stringify(m.tool_call_id)} does not name a tool call of an earlier assistant message`, type: 'value_error' });
        }
      }
      if (m.usage_metadata !== undefined && !isObj(m.usage_metadata)) out.push({ loc: [...mloc, 'usage_metadata'], msg: 'usage_metadata should be an object', type: 'dict_type' });
      if (m.role === 'assistant' && Array.isArray(m.content)) {
        for (const item of m.content) if (isObj(item) && item.type === 'tool_call' && typeof item.id === 'string') toolCallIds.add(item.id);
      }
    });
  }
  return out;
}
