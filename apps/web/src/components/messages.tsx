import type { RunRecord } from '@th/contracts';
import { JsonView } from './json-view';

interface Item {
  type?: string;
  text?: unknown;
  reasoning?: unknown;
  [k: string]: unknown;
}
export interface ChatMessage {
  role: string;
  content: Item[] | string;
  usage_metadata?: Record<string, unknown>;
  tool_calls?: unknown;
  [k: string]: unknown;
}

/**
 * The run's conversation, when it has one: the writer's normalized view of LLM runs (OpenAI chat,
 * Anthropic messages and the spec's format in one shape), else OpenAI-style `messages` in the inputs
 * and `choices` in the outputs. Null when the run holds no messages.
 */
export function chatOf(run: RunRecord): ChatMessage[] | null {
  const view = run.llm;
  if (view && (view.input_messages.length > 0 || view.output_messages.length > 0)) {
    return [...view.input_messages, ...view.output_messages] as unknown as ChatMessage[];
  }
  const inputs = run.inputs as { messages?: unknown } | null;
  const outputs = run.outputs as { choices?: { message?: unknown }[] } | null;
  const msgs: ChatMessage[] = [];
  if (Array.isArray(inputs?.messages)) msgs.push(...inputs.messages.flat().filter(isMessage));
  for (const c of outputs?.choices ?? []) if (isMessage(c.message)) msgs.push(c.message);
  return msgs.length ? msgs : null;
}

const isMessage = (m: unknown): m is ChatMessage => typeof m === 'object' && m !== null && typeof (m as { role?: unknown }).role === 'string';

export function Messages({ messages }: { messages: ChatMessage[] }) {
  return (
    <ol className="messages">
      {messages.map((m, i) => (
        <li key={i} className={`message role-${m.role}`} data-role={m.role}>
          <span className="role">{m.role}</span>
          <Content content={m.content} />
          {m.tool_calls !== undefined && <JsonView value={m.tool_calls} label="Tool calls" />}
          {m.usage_metadata && (
            <p className="usage">
              {Object.entries(m.usage_metadata)
                .filter(([, v]) => typeof v === 'number')
                .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${String(v)}`)
                .join(' · ')}
            </p>
          )}
        </li>
      ))}
    </ol>
  );
}

function Content({ content }: { content: ChatMessage['content'] }) {
  if (typeof content === 'string') return <p className="text">{content}</p>;
  if (!Array.isArray(content)) return <JsonView value={content} label="Content" />;
  return (
    <>
      {content.map((item, i) => {
        if (item.type === 'text' && typeof item.text === 'string') return <p key={i} className="text">{item.text}</p>;
        if (item.type === 'reasoning') {
          const text = typeof item.reasoning === 'string' ? item.reasoning : typeof item.text === 'string' ? item.text : null;
          if (text !== null) return <p key={i} className="text reasoning">{text}</p>;
        }
        return (
          <div key={i} className="item">
            <span className="item-type">{item.type ?? 'item'}</span>
            <JsonView value={item} label={item.type ?? 'Item'} />
          </div>
        );
      })}
    </>
  );
}
