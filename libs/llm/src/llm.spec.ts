import { modelPriceMapCreateSchema } from '@th/contracts';
import {
  analyzeLlmRun,
  computeCosts,
  countTokens,
  DEFAULT_PRICE_MAP,
  detectFormat,
  extractUsage,
  matchPrice,
  normalizeMessages,
  resolveModel,
  validateSpecMessages,
  type PriceEntry,
} from './index';

const entry = (over: Partial<PriceEntry>): PriceEntry => ({
  id: 'p1',
  match_pattern: '^my-model$',
  provider: null,
  prompt_cost: 0.001,
  completion_cost: 0.002,
  prompt_cost_details: null,
  completion_cost_details: null,
  start_time: null,
  ...over,
});

describe('format detection and normalization', () => {
  it('reads OpenAI chat completions inputs and outputs', () => {
    const inputs = {
      model: 'gpt-4o',
      messages: [
        { role: 'developer', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":1}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: '2' },
      ],
    };
    expect(detectFormat(inputs)).toBe('openai');
    expect(normalizeMessages(inputs)).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'be brief' }] },
      { role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image', base64: 'AAAA', mime_type: 'image/png' }] },
      { role: 'assistant', content: [{ type: 'tool_call', id: 'c1', name: 'add', args: { a: 1 } }] },
      { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: '2' }] },
    ]);
    const outputs = { object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hello' } }] };
    expect(detectFormat(outputs)).toBe('openai');
    expect(normalizeMessages(outputs)).toEqual([{ role: 'assistant', content: [{ type: 'text', text: 'hello' }] }]);
  });

  it('reads Anthropic messages inputs and outputs', () => {
    const inputs = {
      model: 'claude-sonnet-4-20250514',
      system: 'be brief',
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm' }, { type: 'tool_use', id: 't1', name: 'weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'sunny' }] },
      ],
    };
    expect(detectFormat(inputs)).toBe('anthropic');
    expect(normalizeMessages(inputs)).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'be brief' }] },
      { role: 'user', content: [{ type: 'text', text: 'weather?' }] },
      { role: 'assistant', content: [{ type: 'reasoning', text: 'hmm' }, { type: 'tool_call', id: 't1', name: 'weather', args: { city: 'Paris' } }] },
      { role: 'tool', tool_call_id: 't1', content: [{ type: 'text', text: 'sunny' }] },
    ]);
    const outputs = { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Sunny.' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 3, cache_read_input_tokens: 5 } };
    expect(detectFormat(outputs)).toBe('anthropic');
    expect(normalizeMessages(outputs)).toEqual([{ role: 'assistant', content: [{ type: 'text', text: 'Sunny.' }] }]);
    expect(extractUsage(outputs, {})).toMatchObject({ input_tokens: 15, output_tokens: 3, total_tokens: 18, input_token_details: { cache_read: 5 }, source: 'provider_usage' });
  });

  it('reads the spec format and keeps it as is', () => {
    const inputs = { messages: [{ role: 'reasoning', content: [{ type: 'reasoning', text: 'think' }] }, { role: 'user', content: [{ type: 'text', text: 'hi' }] }] };
    expect(detectFormat(inputs)).toBe('spec');
    expect(normalizeMessages(inputs)).toEqual(inputs.messages);
  });
});

describe('spec format validation', () => {
  it('accepts a well-formed conversation with a tool call answered later', () => {
    const messages = [
      { role: 'user', content: [{ type: 'text', text: 'add' }] },
      { role: 'assistant', content: [{ type: 'tool_call', id: 'c1', name: 'add', args: { a: 1 } }] },
      { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: '2' }] },
      { role: 'assistant', content: [{ type: 'server_tool_call', id: 's1', name: 'search', args: {} }, { type: 'server_tool_result', tool_call_id: 's1', status: 'success', output: [1] }] },
      { role: 'user', content: [{ type: 'image', url: 'https://x/y.png' }] },
    ];
    expect(validateSpecMessages([{ loc: ['inputs', 'messages'], messages }])).toEqual([]);
  });

  it('names every broken rule with its location', () => {
    const messages = [
      { role: 'robot', content: [{ type: 'text' }] },
      { role: 'user' },
      { role: 'user', tool_call_id: 'c1', content: [] },
      { role: 'tool', tool_call_id: 'nope', content: [{ type: 'tool_call', name: 'x' }] },
      { role: 'assistant', content: [{ type: 'server_tool_result', tool_call_id: 's' }, { type: 'audio' }, { type: 'weird' }] },
    ];
    const problems = validateSpecMessages([{ loc: ['inputs', 'messages'], messages }]);
    const at = problems.map((p) => p.loc.join('.'));
    expect(at).toEqual([
      'inputs.messages.0.role',
      'inputs.messages.0.content.0.text',
      'inputs.messages.1.content',
      'inputs.messages.2.tool_call_id',
      'inputs.messages.3.content.0.args',
      'inputs.messages.3.tool_call_id',
      'inputs.messages.4.content.0.status',
      'inputs.messages.4.content.1.base64',
      'inputs.messages.4.content.2.type',
    ]);
    expect(problems[5].msg).toContain('earlier assistant message');
  });

  it('does not accept a tool call made only after the tool message', () => {
    const messages = [
      { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: '2' }] },
      { role: 'assistant', content: [{ type: 'tool_call', id: 'c1', args: {} }] },
    ];
    expect(validateSpecMessages([{ loc: ['m'], messages }]).map((p) => p.loc.join('.'))).toEqual(['m.0.tool_call_id']);
  });
});

describe('model, usage and tokens', () => {
  it('resolves provider and model in the spec order', () => {
    expect(resolveModel({ svc_provider: 'openai', svc_model_name: 'a', ls_model_name: 'b' }, { model: 'c' })).toEqual({ provider: 'openai', model: 'a' });
    expect(resolveModel({ ls_provider: 'anthropic', ls_model_name: 'b' }, { model: 'c' })).toEqual({ provider: 'anthropic', model: 'b' });
    expect(resolveModel({}, { model: 'c', model_name: 'd' })).toEqual({ provider: null, model: 'c' });
    expect(resolveModel(undefined, { model_name: 'd' })).toEqual({ provider: null, model: 'd' });
  });

  it('reads usage_metadata from the run or the outputs, inferring the total', () => {
    const u = extractUsage(
      { usage_metadata: { input_tokens: 10, output_tokens: 5, input_token_details: { cache_read: 4, bogus: 1 }, output_token_details: { reasoning: 2 } } },
      {},
    );
    expect(u).toMatchObject({ input_tokens: 10, output_tokens: 5, total_tokens: 15, input_token_details: { cache_read: 4 }, output_token_details: { reasoning: 2 } });
    expect(extractUsage({}, { metadata: { usage_metadata: { input_tokens: 1, output_tokens: 1, total_tokens: 7 } } })?.total_tokens).toBe(7);
    expect(extractUsage({ usage: { prompt_tokens: 3, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 1 } } }, {})).toMatchObject({ input_tokens: 3, output_tokens: 4, total_tokens: 7, input_token_details: { cache_read: 1 } });
    expect(extractUsage({ text: 'x' }, {})).toBeNull();
  });

  it('counts exactly what the encoder itself encodes, memoized pieces and special tokens included', () => {
    // The encoder js-tiktoken builds from the same ranks, encoding with every special token allowed.
    const ranksOf = (m: { default?: unknown }) => m.default ?? m;
    const { Tiktoken } = jest.requireActual<{ Tiktoken: new (r: unknown) => { encode(t: string, a: 'all'): number[] } }>('js-tiktoken/lite');
    const encoders = {
      'gpt-4o': new Tiktoken(ranksOf(jest.requireActual('js-tiktoken/ranks/o200k_base'))),
      'gpt-3.5-turbo': new Tiktoken(ranksOf(jest.requireActual('js-tiktoken/ranks/cl100k_base'))),
    };
    const fixed = [
      'lorem ipsum dolor sit amet '.repeat(40),
      'a   b\n\n\tc  \r\n  ',
      '   leading and trailing   ',
      'Numbers 1234567 and 3.14159, dates 2026-11-24T10:00:00Z',
      'def f(x):\n    return {"k": [1, 2, 3]}  # comment\n',
      'émigré naïve 東京 🙂🙂 Привет мир ﷽',
      'before<|endoftext|>after <|endoftext|><|endoftext|> tail',
      "It's don't we'll I'M THEY'RE",
      JSON.stringify({ prompt: 'x'.repeat(120), nested: { a: [true, null, 1e21] } }),
      '',
    ];
    // Random strings over an alphabet with the pattern's edge cases: spaces, newlines, apostrophes, digits, unicode.
    let seed = 42;
    const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const alphabet = ['a', 'B', ' ', ' ', '\n', '\t', "'", 's', 't', '1', '9', '.', ',', 'é', '東', '🙂', '<|endoftext|>', 'll', 'RE', '  '];
    const random = Array.from({ length: 300 }, () => Array.from({ length: 1 + Math.floor(rand() * 40) }, () => alphabet[Math.floor(rand() * alphabet.length)]).join(''));
    for (const [model, enc] of Object.entries(encoders)) {
      for (const text of [...fixed, ...random, ...fixed]) expect(countTokens(text, model)).toBe(enc.encode(text, 'all').length);
    }
  });

  it('estimates pieces too long to byte-pair encode from their size, in time linear in the text', () => {
    // One "word" of 200,000 rare letters, and the same cut into 100-letter words: either took minutes before.
    let rare = '';
    for (let i = 0; i < 200_000; i++) rare += String.fromCodePoint(0x4e00 + ((i * 7919) % 20_000));
    const spaced = rare.replace(/(.{100})/gu, '$1 ');
    const t0 = Date.now();
    expect(countTokens(rare, 'gpt-4o')).toBe(Math.ceil(Buffer.byteLength(rare) / 4));
    const n = countTokens(spaced, 'gpt-4o');
    expect(Date.now() - t0).toBeLessThan(15_000);
    // The first pieces are encoded (up to the budget), the rest estimated: a count in the text's order of size.
    expect(n).toBeGreaterThan(spaced.length / 4);
    expect(n).toBeLessThan(Buffer.byteLength(spaced));
    // Short pieces stay exact.
    expect(countTokens('hello world', 'gpt-4o')).toBe(2);
  });

  it('estimates tokens with the real tokenizer of the model', () => {
    expect(countTokens('hello world', 'gpt-4o')).toBe(2);
    expect(countTokens('hello world', 'gpt-3.5-turbo')).toBe(2);
    const a = analyzeLlmRun({ inputs: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hello world' }] }, outputs: { choices: [{ message: { role: 'assistant', content: 'hi there' } }] } });
    // 3 (priming) + 3 (framing) + 1 (role "user") + 2 (text); the reply's own text: 2.
    expect(a.prompt_tokens).toBe(9);
    expect(a.completion_tokens).toBe(2);
    expect(a.total_tokens).toBe(11);
    expect(a.view.token_source).toBe('estimated');
  });
});

describe('prices and costs', () => {
  it('uses explicit costs over the price map', () => {
    const usage = extractUsage({ usage_metadata: { input_tokens: 100, output_tokens: 10, total_cost: 0.5 } }, {});
    expect(computeCosts(usage, entry({}))).toMatchObject({ total_cost: 0.5, prompt_cost: null, source: 'explicit' });
  });

  it('prices cache reads and creations at their own prices', () => {
    const usage = extractUsage({ usage_metadata: { input_tokens: 100, output_tokens: 10, input_token_details: { cache_read: 40, cache_creation: 10 } } }, {});
    const c = computeCosts(usage, entry({ prompt_cost_details: { cache_read: 0.0001, cache_creation: 0.01 } }));
    expect(c.prompt_cost).toBeCloseTo(50 * 0.001 + 40 * 0.0001 + 10 * 0.01, 12);
    expect(c.completion_cost).toBeCloseTo(10 * 0.002, 12);
    expect(c.total_cost).toBeCloseTo(c.prompt_cost! + c.completion_cost!, 12);
  });

  it('matches by pattern and provider, newest start_time first, workspace before defaults', () => {
    const entries = [entry({ id: 'a', provider: 'openai' }), entry({ id: 'b', start_time: '2025-01-01T00:00:00.000000Z' })];
    expect(matchPrice(entries, 'my-model', 'anthropic', '2026-01-01T00:00:00.000000Z')?.id).toBe('b');
    expect(matchPrice(entries, 'my-model', 'anthropic', '2024-01-01T00:00:00.000000Z')).toBeNull();
    expect(matchPrice(entries, 'other', null)).toBeNull();
    expect(matchPrice(DEFAULT_PRICE_MAP, 'gpt-4o-mini-2024-07-18', 'openai')?.prompt_cost).toBeCloseTo(0.15e-6, 15);
    expect(matchPrice(DEFAULT_PRICE_MAP, 'claude-sonnet-4-20250514', 'anthropic')?.completion_cost).toBeCloseTo(15e-6, 15);
    const a = analyzeLlmRun(
      { inputs: { model: 'gpt-4o' }, outputs: { usage_metadata: { input_tokens: 1000, output_tokens: 100 } } },
      [entry({ id: 'mine', match_pattern: '^gpt-4o$', prompt_cost: 1, completion_cost: 2 })],
    );
    expect(a.total_cost).toBe(1200);
    expect(a.view.price_map_id).toBe('mine');
    const d = analyzeLlmRun({ inputs: { model: 'gpt-4o' }, outputs: { usage_metadata: { input_tokens: 1000, output_tokens: 100 } } });
    expect(d.total_cost).toBeCloseTo(1000 * 2.5e-6 + 100 * 10e-6, 12);
  });

  it('rejects a price map with an invalid pattern', () => {
    const r = modelPriceMapCreateSchema.safeParse({ name: 'x', match_pattern: '^gpt-(4o', prompt_cost: 1, completion_cost: 1 });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0].path).toEqual(['match_pattern']);
  });
});
