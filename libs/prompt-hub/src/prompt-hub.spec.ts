import { createHmac } from 'node:crypto';
import { DomainError } from '@th/platform';
import { checkManifest, commitHash, manifestForPull } from './prompt-hub.service';
import { signWebhookBody } from './prompt-webhook.delivery';
import { webhookCovers } from './prompt-webhooks.service';

const prompt = { lc: 1, type: 'constructor', id: ['langchain', 'prompts', 'prompt', 'PromptTemplate'], kwargs: { template: '{q}' } };
const model = { lc: 1, type: 'constructor', id: ['langchain', 'chat_models', 'openai', 'ChatOpenAI'], kwargs: {} };

describe('commit hashes', () => {
  it('depend on the parent and the manifest text only', () => {
    const a = commitHash(null, '{"a":1}');
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(commitHash(null, '{"a":1}')).toBe(a);
    expect(commitHash(a, '{"a":1}')).not.toBe(a);
    expect(commitHash(null, '{"a":2}')).not.toBe(a);
  });
});

describe('manifest checks (400 with the hub messages)', () => {
  const message = (m: Record<string, unknown>) => {
    try {
      checkManifest(m);
      return null;
    } catch (err) {
      expect(err).toBeInstanceOf(DomainError);
      return (err as Error).message;
    }
  };
  it('accepts LangChain objects and refuses the rest', () => {
    expect(message(prompt)).toBeNull();
    expect(message({ hi: 'hello' })).toBe('Manifest must have an id field');
    expect(message({ id: [] })).toBe('Manifest must have an id field');
    expect(message({ id: 'langchain' })).toBe('Manifest must have an id field');
    expect(message({ id: ['hi'] })).toBe('Manifest type hi is not supported');
    expect(message({ id: ['os', 'system'] })).toBe('Manifest type os.system is not supported');
  });
});

describe('manifestForPull', () => {
  const playground = { lc: 1, type: 'constructor', id: ['langsmith', 'playground', 'PromptPlayground'], kwargs: { first: prompt, last: model } };
  const sequence = { ...playground, id: ['langchain', 'schema', 'runnable', 'RunnableSequence'] };
  it('returns plain prompts as stored', () => {
    expect(manifestForPull(prompt, false)).toBe(prompt);
    expect(manifestForPull(prompt, true)).toBe(prompt);
  });
  it('returns the prompt alone without include_model, a loadable RunnableSequence with it', () => {
    expect(manifestForPull(playground, false)).toBe(prompt);
    expect(manifestForPull(playground, true)).toEqual(sequence);
    expect(manifestForPull(sequence, false)).toBe(prompt);
    expect(manifestForPull(sequence, true)).toBe(sequence);
  });
});

describe('webhook coverage', () => {
  const w = (include: string[] | null, exclude: string[] | null, triggers: ('commit' | 'tag:create' | 'tag:update')[] = ['commit']) => ({ include_prompts: include, exclude_prompts: exclude, triggers });
  it('follows include, exclude and triggers', () => {
    expect(webhookCovers(w(null, null), 'p', 'commit')).toBe(true);
    expect(webhookCovers(w([], null), 'p', 'commit')).toBe(true);
    expect(webhookCovers(w(['q'], null), 'p', 'commit')).toBe(false);
    expect(webhookCovers(w(['p'], ['p']), 'p', 'commit')).toBe(false);
    expect(webhookCovers(w(null, null), 'p', 'tag:create')).toBe(false);
    expect(webhookCovers(w(null, null, ['tag:create']), 'p', 'tag:create')).toBe(true);
  });
});

describe('webhook signatures', () => {
  it('are HMAC-SHA256 of "<t>.<body>" with the secret', () => {
    const expected = createHmac('sha256', 'whsec_x').update('1700000000.{"a":1}').digest('hex');
    expect(signWebhookBody('whsec_x', '{"a":1}', 1700000000)).toBe(`t=1700000000,v1=${expected}`);
  });
});
