import * as protobuf from 'protobufjs';
import { EventLoopPacer, MAX_JSON_DEPTH, ValidationFailed } from '@th/platform';
import { decodeOtlpJson, decodeOtlpJsonPaced, decodeOtlpProtobuf } from './otlp-decode';
import { spansToRuns } from './otlp-map';
import { otlpTypes } from './otlp-proto';

/** A request of one span whose attribute "deep" nests `levels` kvlist values (encoded past protobufjs's own limit). */
function request(levels: number, attributes: object[] = []): Buffer {
  let value: object = { stringValue: 'leaf' };
  for (let i = 0; i < levels; i++) value = { kvlistValue: { values: [{ key: 'k', value }] } };
  const { request: type } = otlpTypes();
  const span = { traceId: Buffer.alloc(16, 1), spanId: Buffer.alloc(8, 2), name: 's', startTimeUnixNano: 1, endTimeUnixNano: 2, attributes: [{ key: 'deep', value }, ...attributes] };
  const limit = protobuf.util.recursionLimit;
  protobuf.util.recursionLimit = 10_000;
  try {
    return Buffer.from(type.encode(type.fromObject({ resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] })).finish());
  } finally {
    protobuf.util.recursionLimit = limit;
  }
}

describe('OTLP attribute depth', () => {
  it('refuses protobuf attribute values nested past what protobufjs decodes (100 messages) with a 422', () => {
    expect(decodeOtlpProtobuf(request(30)).resourceSpans?.[0].scopeSpans?.[0].spans).toHaveLength(1);
    for (const levels of [40, 1_000]) expect(() => decodeOtlpProtobuf(request(levels))).toThrow(ValidationFailed);
  });

  it('keeps a JSON-encoded string attribute nested past MAX_JSON_DEPTH as the string it is', () => {
    const deep = `${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}`;
    const decoded = decodeOtlpProtobuf(request(0, [{ key: 'input.value', value: { stringValue: deep } }, { key: 'output.value', value: { stringValue: '{"a":[1]}' } }]));
    const [run] = spansToRuns(decoded, {});
    expect(run.inputs).toEqual({ input: deep });
    expect(run.outputs).toEqual({ a: [1] });
  });
});

describe('decodeOtlpJsonPaced', () => {
  const span = (i: number, extra: object = {}) => ({
    traceId: '0'.repeat(31) + (i % 10),
    spanId: '1'.repeat(15) + (i % 10),
    name: `s${i}`,
    kind: i % 2 ? 'SPAN_KIND_SERVER' : 2,
    startTimeUnixNano: String(1_700_000_000_000_000_000n + BigInt(i)),
    attributes: [{ key: 'k', value: { stringValue: `v${i}` } }],
    status: { code: 'STATUS_CODE_OK' },
    ...extra,
  });
  const bodies: [string, unknown][] = [
    ['several resources and scopes', { resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: 'a' }, spans: [span(1), span(2)] }, { spans: [] }, {}] }, { scopeSpans: [{ spans: [span(3)], schemaUrl: 'u' }] }] }],
    ['no resourceSpans', {}],
    ['null body', null],
    ['a bad span among good ones', { resourceSpans: [{ scopeSpans: [{ spans: [span(1), span(2, { traceId: 'zz' }), span(3, { name: 5 })] }] }] }],
    ['a bad envelope and a bad span', { resourceSpans: [{ resource: { attributes: 'no' }, scopeSpans: [{ scope: { name: 1 }, spans: [span(1, { spanId: 'x' })], schemaUrl: 2 }] }] }],
    ['spans not an array', { resourceSpans: [{ scopeSpans: [{ spans: { a: 1 } }] }] }],
    ['a NUL in a span', { resourceSpans: [{ scopeSpans: [{ spans: [span(1, { name: 'a\u0000' })] }] }] }],
  ];

  const outcome = async (f: () => unknown) => {
    try {
      return { ok: await f() };
    } catch (err) {
      if (err instanceof ValidationFailed) return { detail: err.message };
      throw err;
    }
  };

  it.each(bodies)('answers as decodeOtlpJson does: %s', async (_label, body) => {
    const pacer = new EventLoopPacer(0);
    expect(await outcome(() => decodeOtlpJsonPaced(body, pacer))).toEqual(await outcome(() => decodeOtlpJson(body)));
  });
});
