import { randomUUID } from 'node:crypto';
import type { Client } from '@langchain/langgraph-sdk';
import type { Client as Pg } from 'pg';
import { useAgentServer, type TestAgentServer } from './testing/harness';
import { detail422, sendJson } from './testing/sdk';

jest.setTimeout(60_000);

let server: TestAgentServer & { dropDatabase(): Promise<void> };
let client: Client;
let pg: Pg;

useAgentServer((f) => ({ server, client, pg } = f));

/** Each test works under its own root label, so tests never see each other's items. */
const root = () => `t${randomUUID().slice(0, 8)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const send = (method: string, path: string, body: unknown) => sendJson(server.url, method, path, body);
const rowsUnder = async (label: string) =>
  Number((await pg.query<{ n: string }>(`SELECT count(*) AS n FROM agent_server.store_items WHERE namespace[1] = $1`, [label])).rows[0].n);
/** The fields as the server sends them (the client's Item type names only the camelCase copies it adds). */
const wire = (item: unknown) => item as { created_at: string; updated_at: string };
const expiresAt = async (namespace: string[], key: string) =>
  (await pg.query<{ e: Date | null }>(`SELECT expires_at AS e FROM agent_server.store_items WHERE namespace = $1::text[] AND key = $2`, [namespace, key])).rows[0]?.e;

describe('store items', () => {
  it('puts, gets and overwrites an item: created_at kept, updated_at moves', async () => {
    const ns = [root(), 'user-1', 'prefs'];
    expect(await client.store.putItem(ns, 'theme', { color: 'dark', size: 14 })).toBeUndefined();
    const first = await client.store.getItem(ns, 'theme');
    expect(first).toMatchObject({ namespace: ns, key: 'theme', value: { color: 'dark', size: 14 } });
    expect(wire(first).created_at).toBe(wire(first).updated_at);
    expect(first!.createdAt).toBe(wire(first).created_at);
    expect(Date.parse(wire(first).created_at)).toBeGreaterThan(Date.now() - 60_000);

    await sleep(20); // timestamps are answered in milliseconds
    await client.store.putItem(ns, 'theme', { color: 'light' });
    const second = await client.store.getItem(ns, 'theme');
    expect(second!.value).toEqual({ color: 'light' });
    expect(wire(second).created_at).toBe(wire(first).created_at);
    expect(Date.parse(wire(second).updated_at)).toBeGreaterThan(Date.parse(wire(first).updated_at));
    expect(await rowsUnder(ns[0])).toBe(1);

    // a sibling key and a longer namespace are separate items
    await client.store.putItem(ns, 'lang', { code: 'fr' });
    await client.store.putItem([...ns, 'deeper'], 'theme', { color: 'blue' });
    expect((await client.store.getItem(ns, 'theme'))!.value).toEqual({ color: 'light' });
    expect((await client.store.getItem([...ns, 'deeper'], 'theme'))!.value).toEqual({ color: 'blue' });
    expect(await rowsUnder(ns[0])).toBe(3);
  });

  it('answers a missing item with 200 and a JSON null, which the client reads as null', async () => {
    const ns = [root(), 'nobody'];
    expect(await client.store.getItem(ns, 'absent')).toBeNull();
    const r = await fetch(`${server.url}/store/items?namespace=${ns.join('.')}&key=absent`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await r.text()).toBe('null');
  });

  it('deletes an item, and deleting an absent item is still 204', async () => {
    const ns = [root(), 'docs'];
    await client.store.putItem(ns, 'a', { n: 1 });
    await client.store.putItem(ns, 'b', { n: 2 });
    expect(await client.store.deleteItem(ns, 'a')).toBeUndefined();
    expect(await client.store.getItem(ns, 'a')).toBeNull();
    expect((await client.store.getItem(ns, 'b'))!.value).toEqual({ n: 2 });
    expect(await rowsUnder(ns[0])).toBe(1);
    const again = await send('DELETE', '/store/items', { namespace: ns, key: 'a' });
    expect(again.status).toBe(204);
    expect(await rowsUnder(ns[0])).toBe(1);
  });

  it('accepts refresh_ttl on GET as the client sends it', async () => {
    const ns = [root(), 'q'];
    await client.store.putItem(ns, 'k', { v: 1 }, { ttl: 10 });
    const put = (await expiresAt(ns, 'k'))!.getTime();
    await sleep(10);
    expect((await client.store.getItem(ns, 'k', { refreshTtl: false }))!.value).toEqual({ v: 1 });
    expect((await expiresAt(ns, 'k'))!.getTime()).toBe(put);
    expect((await client.store.getItem(ns, 'k', { refreshTtl: true }))!.value).toEqual({ v: 1 });
    expect((await expiresAt(ns, 'k'))!.getTime()).toBeGreaterThan(put);
    expect((await fetch(`${server.url}/store/items?namespace=${ns.join('.')}&key=k&refresh_ttl=maybe`)).status).toBe(422);
  });
});

describe('store search', () => {
  it('searches under a namespace prefix with filter, limit and offset (newest first; query ignored, score null)', async () => {
    const r = root();
    await client.store.putItem([r, 'docs', 'u1'], 'd1', { author: 'ann', kind: 'note', tags: ['a'] });
    await sleep(5);
    await client.store.putItem([r, 'docs', 'u2'], 'd2', { author: 'bob', kind: 'note' });
    await sleep(5);
    await client.store.putItem([r, 'docs', 'u1'], 'd3', { author: 'ann', kind: 'memo', tags: ['a', 'b'] });
    await sleep(5);
    await client.store.putItem([r, 'other'], 'o1', { author: 'ann', kind: 'note' });
    await client.store.putItem([`${r}x`, 'docs'], 'elsewhere', { author: 'ann' }); // a different root label, not under the prefix

    const all = await client.store.searchItems([r, 'docs']);
    expect(all.items.map((i) => i.key)).toEqual(['d3', 'd2', 'd1']);
    expect(all.items[0]).toMatchObject({ namespace: [r, 'docs', 'u1'], key: 'd3', value: { author: 'ann', kind: 'memo' }, score: null });
    expect(all.items[0].createdAt).toBe(wire(all.items[0]).created_at);

    expect((await client.store.searchItems([r])).items.map((i) => i.key)).toEqual(['o1', 'd3', 'd2', 'd1']);
    expect((await client.store.searchItems([r, 'docs', 'u1'])).items.map((i) => i.key)).toEqual(['d3', 'd1']);
    expect((await client.store.searchItems([r, 'doc'])).items).toEqual([]); // labels match whole, not as string prefixes

    // filter: equality on top-level value fields (all must match; a JSON value compares whole)
    expect((await client.store.searchItems([r], { filter: { author: 'ann' } })).items.map((i) => i.key)).toEqual(['o1', 'd3', 'd1']);
    expect((await client.store.searchItems([r], { filter: { author: 'ann', kind: 'note' } })).items.map((i) => i.key)).toEqual(['o1', 'd1']);
    expect((await client.store.searchItems([r], { filter: { tags: ['a'] } })).items.map((i) => i.key)).toEqual(['d1']);
    expect((await client.store.searchItems([r], { filter: { author: 'zed' } })).items).toEqual([]);

    // limit and offset page through the same order
    expect((await client.store.searchItems([r], { limit: 2 })).items.map((i) => i.key)).toEqual(['o1', 'd3']);
    expect((await client.store.searchItems([r], { limit: 2, offset: 2 })).items.map((i) => i.key)).toEqual(['d2', 'd1']);
    expect((await client.store.searchItems([r], { limit: 2, offset: 4 })).items).toEqual([]);

    // query is accepted and ignored: the same plain results, score null
    const withQuery = await client.store.searchItems([r, 'docs'], { query: 'notes by ann', filter: { author: 'ann' } });
    expect(withQuery.items.map((i) => [i.key, i.score])).toEqual([
      ['d3', null],
      ['d1', null],
    ]);
  });

  it('lists namespaces with prefix, suffix, max_depth, limit and offset', async () => {
    const r = root();
    const tail = `end${randomUUID().slice(0, 8)}`;
    for (const ns of [
      [r, 'b', 'c'],
      [r, 'b', 'd', 'e'],
      [r, 'b', 'd', 'i'],
      [r, 'b', 'f'],
      [r, 'c', 'f'],
      [r, 'c', tail],
    ]) {
      await client.store.putItem(ns, 'k', { x: 1 });
    }
    await client.store.putItem([r, 'b', 'c'], 'k2', { x: 2 }); // two items, one namespace

    const list = async (o: Parameters<Client['store']['listNamespaces']>[0]) => (await client.store.listNamespaces(o)).namespaces;
    expect(await list({ prefix: [r] })).toEqual([
      [r, 'b', 'c'],
      [r, 'b', 'd', 'e'],
      [r, 'b', 'd', 'i'],
      [r, 'b', 'f'],
      [r, 'c', tail], // "end..." sorts before "f"
      [r, 'c', 'f'],
    ]);
    expect(await list({ prefix: [r, 'b'], maxDepth: 3 })).toEqual([
      [r, 'b', 'c'],
      [r, 'b', 'd'],
      [r, 'b', 'f'],
    ]);
    expect(await list({ prefix: [r], maxDepth: 2 })).toEqual([
      [r, 'b'],
      [r, 'c'],
    ]);
    expect(await list({ prefix: [r], suffix: ['f'] })).toEqual([
      [r, 'b', 'f'],
      [r, 'c', 'f'],
    ]);
    expect(await list({ suffix: [tail] })).toEqual([[r, 'c', tail]]);
    expect(await list({ prefix: [r, '*', 'd'] })).toEqual([
      [r, 'b', 'd', 'e'],
      [r, 'b', 'd', 'i'],
    ]); // '*' matches any one label, as in LangGraph's stores
    expect(await list({ prefix: [r], limit: 2, offset: 1 })).toEqual([
      [r, 'b', 'd', 'e'],
      [r, 'b', 'd', 'i'],
    ]);
    expect(await list({ prefix: [r, 'zzz'] })).toEqual([]);
  });
});

describe('store ttl', () => {
  it('expires an item after its ttl in (fractional) minutes; a read refreshes the ttl unless told not to', async () => {
    const ns = [root(), 'session'];
    const ttl = 0.02; // minutes: 1.2 s
    await client.store.putItem(ns, 'plain', { v: 1 }, { ttl });
    await client.store.putItem(ns, 'read', { v: 2 }, { ttl });
    await client.store.putItem(ns, 'forever', { v: 3 });
    const plainExpiry = (await expiresAt(ns, 'plain'))!;
    const readExpiry = (await expiresAt(ns, 'read'))!;
    expect(plainExpiry.getTime() - Date.now()).toBeGreaterThan(500);
    expect(plainExpiry.getTime() - Date.now()).toBeLessThanOrEqual(1_300);
    expect(await expiresAt(ns, 'forever')).toBeNull();

    await sleep(700);
    expect((await client.store.getItem(ns, 'plain', { refreshTtl: false }))!.value).toEqual({ v: 1 });
    expect((await expiresAt(ns, 'plain'))!.getTime()).toBe(plainExpiry.getTime());
    expect((await client.store.getItem(ns, 'read'))!.value).toEqual({ v: 2 }); // refresh_ttl absent: refreshed
    expect((await expiresAt(ns, 'read'))!.getTime()).toBeGreaterThanOrEqual(readExpiry.getTime() + 600);

    await sleep(800); // 1.5 s after the put: "plain" has expired, "read" (refreshed at 0.7 s) has not
    expect(await client.store.getItem(ns, 'plain')).toBeNull();
    expect(await expiresAt(ns, 'plain')).toBeUndefined(); // the read that met it deleted it
    expect((await client.store.searchItems(ns)).items.map((i) => i.key).sort()).toEqual(['forever', 'read']);
    expect((await client.store.getItem(ns, 'read'))!.value).toEqual({ v: 2 });
    expect((await client.store.getItem(ns, 'forever'))!.value).toEqual({ v: 3 });

    // an overwrite without ttl makes the item permanent
    await client.store.putItem(ns, 'read', { v: 4 }, { ttl: null });
    expect(await expiresAt(ns, 'read')).toBeNull();
  });

  it('hides expired items from search and namespaces and deletes them', async () => {
    const r = root();
    await client.store.putItem([r, 'gone'], 'k', { v: 1 }, { ttl: 0.005 }); // 0.3 s
    await client.store.putItem([r, 'kept'], 'k', { v: 2 });
    await sleep(400);
    expect((await client.store.searchItems([r], { refreshTtl: false })).items.map((i) => i.namespace)).toEqual([[r, 'kept']]);
    expect((await client.store.listNamespaces({ prefix: [r] })).namespaces).toEqual([[r, 'kept']]);
    expect(await rowsUnder(r)).toBe(1);
  });
});

describe('store validation', () => {
  it('refuses bad bodies and queries with 422 {detail:[{loc,msg,type}]} and writes nothing', async () => {
    const r = root();
    const before = Number((await pg.query<{ n: string }>(`SELECT count(*) AS n FROM agent_server.store_items`)).rows[0].n);

    expect((await detail422(await send('PUT', '/store/items', { namespace: [r], value: { a: 1 } })))[0]).toMatchObject({ loc: ['body', 'key'], type: 'missing' });
    expect((await detail422(await send('PUT', '/store/items', { namespace: [r], key: '', value: { a: 1 } })))[0].loc).toEqual(['body', 'key']);
    const dotted = await detail422(await send('PUT', '/store/items', { namespace: [r, 'a.b'], key: 'k', value: { a: 1 } }));
    expect(dotted[0]).toMatchObject({ loc: ['body', 'namespace', 1], msg: expect.stringContaining('period') });
    expect((await detail422(await send('PUT', '/store/items', { namespace: [r, ''], key: 'k', value: { a: 1 } })))[0].loc).toEqual(['body', 'namespace', 1]);
    expect((await detail422(await send('PUT', '/store/items', { namespace: [], key: 'k', value: { a: 1 } })))[0].loc).toEqual(['body', 'namespace']);
    for (const value of [[1, 2], 'text', 3, null]) {
      expect((await detail422(await send('PUT', '/store/items', { namespace: [r], key: 'k', value })))[0].loc).toEqual(['body', 'value']);
    }
    expect((await detail422(await send('PUT', '/store/items', { namespace: [r], key: 'k', value: { a: 1 }, ttl: -1 })))[0].loc).toEqual(['body', 'ttl']);
    expect((await detail422(await send('PUT', '/store/items', { namespace: [r], key: 'k', value: { a: 1 }, color: 'red' })))[0]).toMatchObject({ loc: ['body'], type: 'extra_forbidden' });
    // the published client refuses a dotted label itself, before sending
    await expect(client.store.putItem([r, 'a.b'], 'k', { a: 1 })).rejects.toThrow(/periods/);

    expect((await detail422(await send('DELETE', '/store/items', { namespace: [r] })))[0]).toMatchObject({ loc: ['body', 'key'], type: 'missing' });
    expect((await detail422(await send('DELETE', '/store/items', { namespace: [r, 'x.y'], key: 'k' })))[0].loc).toEqual(['body', 'namespace', 1]);

    expect((await detail422(await fetch(`${server.url}/store/items?namespace=${r}..x&key=k`)))[0].loc).toEqual(['query', 'namespace', 1]);
    expect((await detail422(await fetch(`${server.url}/store/items?namespace=${r}`)))[0]).toMatchObject({ loc: ['query', 'key'], type: 'missing' });
    expect((await detail422(await fetch(`${server.url}/store/items?key=k`)))[0]).toMatchObject({ loc: ['query', 'namespace'], type: 'missing' });

    expect((await detail422(await send('POST', '/store/items/search', { namespace_prefix: [r, 'a.b'] })))[0].loc).toEqual(['body', 'namespace_prefix', 1]);
    expect((await detail422(await send('POST', '/store/items/search', { namespace_prefix: [r], limit: 0 })))[0].loc).toEqual(['body', 'limit']);
    expect((await detail422(await send('POST', '/store/items/search', { namespace_prefix: [r], filter: 'x' })))[0].loc).toEqual(['body', 'filter']);
    expect((await detail422(await send('POST', '/store/items/search', {})))[0].loc).toEqual(['body', 'namespace_prefix']);
    expect((await detail422(await send('POST', '/store/namespaces', { prefix: ['a.b'] })))[0].loc).toEqual(['body', 'prefix', 0]);
    expect((await detail422(await send('POST', '/store/namespaces', { max_depth: 0 })))[0].loc).toEqual(['body', 'max_depth']);

    expect(await rowsUnder(r)).toBe(0);
    expect(Number((await pg.query<{ n: string }>(`SELECT count(*) AS n FROM agent_server.store_items`)).rows[0].n)).toBe(before);
  });
});
