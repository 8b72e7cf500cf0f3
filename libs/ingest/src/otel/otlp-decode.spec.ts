import * as protobuf from 'protobufjs';
import { MAX_JSON_DEPTH, ValidationFailed } from '@th/platform';
import { decodeOtlpProtobuf } from './otlp-decode';
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
