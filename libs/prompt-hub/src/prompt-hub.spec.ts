import { createHmac } from 'node:crypto';
import { DomainError } from '@th/platform';
import { attachedModel, checkManifest, commitHash, manifestForPull, manifestTextForPull, pulledJson } from './prompt-hub.service';
import { memberText } from './manifest-text';
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
  it('names the attached model: its kwargs and class (model_config, model_provider)', () => {
    const withKwargs = { ...sequence, kwargs: { first: prompt, last: { ...model, kwargs: { model: 'gpt-4o-mini', temperature: 0.5 } } } };
    expect(attachedModel(withKwargs)).toEqual({ model_config: { model: 'gpt-4o-mini', temperature: 0.5 }, model_provider: 'ChatOpenAI' });
    expect(attachedModel(playground)).toEqual({ model_config: {}, model_provider: 'ChatOpenAI' });
    expect(attachedModel(prompt)).toBeNull();
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

describe('manifest text (byte-for-byte pulls)', () => {
  const text = ' { "kwargs" : {"first": {"id":["langchain","prompts","x"],"t":"a \\" } ] {","n":1.0} , "last":[1e3, {"b":[]}]}, "lc":1,\n"id":["langchain","schema","runnable","RunnableSequence"], "x": -2.50E+1, "x": true }';
  it('finds a member by its exact text, the last one when a key repeats', () => {
    expect(JSON.parse(text)).toBeTruthy();
    expect(memberText(text, 'kwargs')).toBe('{"first": {"id":["langchain","prompts","x"],"t":"a \\" } ] {","n":1.0} , "last":[1e3, {"b":[]}]}');
    expect(memberText(memberText(text, 'kwargs')!, 'first')).toBe('{"id":["langchain","prompts","x"],"t":"a \\" } ] {","n":1.0}');
    expect(memberText(text, 'x')).toBe('true');
    expect(memberText(text, 'lc')).toBe('1');
    expect(memberText(text, 'nope')).toBeNull();
    expect(memberText('[1]', 'a')).toBeNull();
    expect(memberText('{}', 'a')).toBeNull();
    expect(memberText('{"\\u0061":2.0}', 'a')).toBe('2.0');
  });
  it('pulls the stored text, or the prompt inside it, without re-serializing', () => {
    expect(manifestTextForPull(text, true)).toBe(text);
    expect(manifestTextForPull(text, false)).toBe('{"id":["langchain","prompts","x"],"t":"a \\" } ] {","n":1.0}');
    const plain = '{"id":["langchain","prompts","prompt","PromptTemplate"],"z":1.0,"a":1e3,"s":"caf\\u00e9"}';
    expect(manifestTextForPull(plain, false)).toBe(plain);
    const head = { owner: 'o', repo: 'r', commit_hash: 'h', examples: [], description: null, model_config: null, model_provider: null };
    expect(JSON.parse(pulledJson(head, plain))).toEqual({ manifest: JSON.parse(plain), ...head });
  });
});
