import { randomUUID } from 'node:crypto';
import { feedbackCreateSchema, feedbackEventFromCreate } from '@th/contracts';
import { CountingPacer, JSON_STRING_PIECE_CHARS } from '@th/platform';
import { feedbackRowJson, feedbackRowsBytes } from './feedback-row';

describe('feedbackRowsBytes', () => {
  it('makes the bytes of the feedbackRowJson lines, large corrections and values quoted in pieces', async () => {
    // Text whose pieces would split surrogate pairs, with quotes, escapes and the placeholder's own text in it.
    const text = (n: number) => `"q" \\ \n \u2028 é \u0000correction_json\u0000 ${'😀'.repeat(n)} "correction_json":"x" `;
    const big = { answer: text(JSON_STRING_PIECE_CHARS), more: Array.from({ length: 2000 }, (_, i) => text(i % 7)) };
    const create = (v: Record<string, unknown>) => ({ ...feedbackCreateSchema.parse(v), id: randomUUID() });
    const events = [
      feedbackEventFromCreate('t1', create({ run_id: randomUUID(), key: 'small', score: 1, correction: { a: 1 }, comment: text(3).replace('\u0000', '') }), 1, Date.now() * 1000),
      feedbackEventFromCreate('t1', create({ run_id: randomUUID(), key: 'big', value: big, correction: big, comment: `,"correction_json":"\\u0000correction_json\\u0000"` }), 2, Date.now() * 1000),
      feedbackEventFromCreate('t1', create({ session_id: randomUUID(), key: 'string value', value: text(JSON_STRING_PIECE_CHARS * 2) }), 3, Date.now() * 1000),
    ];
    expect(events[1].correction_json!.length).toBeGreaterThan(JSON_STRING_PIECE_CHARS * 2);
    const pacer = new CountingPacer(0);
    const bytes = await feedbackRowsBytes(events, pacer);
    expect(bytes.equals(Buffer.from(events.map(feedbackRowJson).join('\n')))).toBe(true);
    expect(pacer.yields).toBeGreaterThan(10);
    expect((await feedbackRowsBytes([])).length).toBe(0);
  });
});
