import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { ClickHouse } from './clickhouse.client';
import { inlineParams, quoteString } from './inline-params';

describe('inlineParams', () => {
  it('writes each placeholder as a typed literal and leaves unknown ones alone', () => {
    const sql = 'SELECT * FROM t WHERE a = {a:UUID} AND b IN {b:Array(UUID)} AND c = {c:String} AND d > {d : Float64} AND e = {missing:String}';
    expect(inlineParams(sql, { a: 'x', b: ['y', 'z'], c: "it's", d: 1.5 })).toBe(
      "SELECT * FROM t WHERE a = CAST('x' AS UUID) AND b IN CAST(['y','z'] AS Array(UUID)) AND c = 'it\\'s' AND d > CAST('1.5' AS Float64) AND e = {missing:String}",
    );
  });

  it('escapes what could end a literal', () => {
    expect(quoteString("a'b\\c\nd\te\r\0")).toBe("'a\\'b\\\\c\\nd\\te\\r\\0'");
    expect(inlineParams('{s:String}', { s: "'); DROP TABLE runs; --" })).toBe("'\\'); DROP TABLE runs; --'");
  });

  it('refuses values it cannot type', () => {
    expect(() => inlineParams('{o:String}', { o: { a: 1 } })).toThrow(/unsupported value/);
  });
});

/** On the engine: an inlined query answers exactly what the engine's own parameter binding answers. */
describe('inlined parameters on ClickHouse (chDB)', () => {
  const dir = join(tmpdir(), `th-inline-${process.pid}`);
  let ch: ClickHouse;
  beforeAll(() => {
    ch = ClickHouse.connect({ kind: 'embedded', path: dir });
  });
  afterAll(async () => {
    await ch?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const strings = ['', 'plain', "quote ' and \\ backslash", 'line\nbreak\ttab\rreturn', 'nul\0byte', 'émigré 東京 🙂', '{not:Param}', "\\'", '\\N', 'ends with \\'];
  const cases: [string, Record<string, unknown>][] = [
    ['SELECT {s:String} AS v', {}],
    ['SELECT toString({u:UUID}) AS v', { u: randomUUID() }],
    ['SELECT arrayMap(x -> toString(x), {us:Array(UUID)}) AS v', { us: [randomUUID(), randomUUID()] }],
    ['SELECT {us:Array(UUID)} = [] AS v', { us: [] }],
    ['SELECT {ss:Array(String)} AS v', { ss: strings }],
    ['SELECT {f:Float64} AS v', { f: 0.1 }],
    ['SELECT {f:Float64} AS v', { f: 3.4e-200 }],
    ['SELECT {f:Float64} AS v', { f: -2.5e-7 }],
    ['SELECT {n:UInt32} AS v', { n: 4294967295 }],
    ['SELECT {n:Int64} AS v', { n: -42 }],
    ['SELECT toString({n:UInt64}) AS v', { n: 18446744073709551615n }],
    ['SELECT {ns:Array(UInt64)} AS v', { ns: [1, 2, 3] }],
    ['SELECT {fs:Array(Float64)} AS v', { fs: [0.5, -1, 3e10] }],
    ['SELECT {b:Bool} AS v', { b: true }],
    ['SELECT {b:Bool} AS v', { b: false }],
  ];

  it('answers as server-side binding does, for every type the services use', async () => {
    const bound = (ch as unknown as { lanes: { client: ClickHouseClient }[] }).lanes[0].client;
    for (const [sql, params] of [...strings.map((s) => ['SELECT {s:String} AS v', { s }] as [string, Record<string, unknown>]), ...cases.slice(1)]) {
      const inlined = await ch.query<{ v: unknown }>(sql, params);
      const rs = await bound.query({ query: sql, query_params: params, format: 'JSONEachRow' });
      expect({ sql, params, v: inlined }).toEqual({ sql, params, v: await rs.json() });
    }
    // And the values come back as sent.
    for (const s of strings) expect((await ch.query<{ v: string }>('SELECT {s:String} AS v', { s }))[0].v).toBe(s);
  });

  it('fails on a value the type cannot take, as binding does', async () => {
    await expect(ch.query('SELECT {u:UUID} AS v', { u: 'not-a-uuid' })).rejects.toThrow();
  });

  it('answers many concurrent inlined queries, each with its own value', async () => {
    // Many point queries at once all answer, each with its own value.
    const ids = Array.from({ length: 40 }, () => randomUUID());
    const answers = await Promise.all(ids.map((u) => ch.query<{ v: string }>('SELECT toString({u:UUID}) AS v', { u })));
    expect(answers.map((a) => a[0].v)).toEqual(ids);
  });
});
