import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { toWire } from './serialize';

describe('toWire', () => {
  it('turns LangChain messages into {type, content, id, ...} and leaves plain values alone', () => {
    const out = toWire({ messages: [new HumanMessage({ content: 'hi', id: 'h1' }), new AIMessage({ content: 'yo', id: 'a1' })], n: 1, when: new Date(0) });
    expect(out).toMatchObject({
      messages: [
        { type: 'human', content: 'hi', id: 'h1' },
        { type: 'ai', content: 'yo', id: 'a1', tool_calls: [] },
      ],
      n: 1,
      when: '1970-01-01T00:00:00.000Z',
    });
    expect(toWire(null)).toBeNull();
    expect(toWire([1, 'a', { b: undefined }])).toEqual([1, 'a', {}]);
  });
});
