import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { Kafka, logLevel } from 'kafkajs';
import { multipartBody } from '@th/testing';
import { api, eventually, makeRun, readRuns, seg, type Json, type SuiteCluster, useSharedCluster } from './cluster-client';

/** gateway, ingest and query as separate OS processes, joined only by Kafka, ClickHouse and PostgreSQL. */
describe('cluster form', () => {
  let cluster: SuiteCluster;
  let call: ReturnType<typeof api>;
  useSharedCluster((c, a) => ((cluster = c), (call = a)));

  it('runs go in through the gateway, over Kafka, into ClickHouse, and out through query', async () => {
    const info = (await (await fetch(`${cluster.gateway.url}/info`)).json()) as Json;
    expect(info).toMatchObject({ batch_ingest_config: { use_multipart_endpoint: true } });
    const runs = Array.from({ length: 50 }, (_, i) => makeRun('cluster-proj', i));
    const res = await call('/runs/batch', { method: 'POST', json: { post: runs.map((r) => r.post), patch: runs.slice(0, 25).map((r) => r.patch) } });
    expect(res.status).toBe(202);
    // the other 25 patches arrive in a later request, gzip-compressed multipart
    const mp = multipartBody(runs.slice(25).flatMap((r) => [{ name: `patch.${r.id}`, data: r.patch }]));
    const res2 = await call('/runs/multipart', { method: 'POST', body: gzipSync(mp.body), headers: { 'content-type': mp.contentType, 'content-encoding': 'gzip' } });
    expect(res2.status).toBe(202);
    const ids = runs.map((r) => r.id);
    const found = await eventually(
      () => readRuns(call, ids),
      (m) => ids.every((id) => m.get(id)?.[0]?.status === 'success'),
    );
    expect(ids.filter((id) => found.get(id)?.length !== 1)).toEqual([]);
    expect(ids.every((id, i) => (found.get(id)![0].outputs as Json).o === i)).toBe(true);
    const one = (await (await call(`/api/v1/runs/${ids[7]}`)).json()) as Json;
    expect(one).toMatchObject({ id: ids[7], name: 'run-7', status: 'success', is_root: true, inputs: { i: 7 } });
    const projects = (await (await call('/sessions?name=cluster-proj&include_stats=true')).json()) as Json[];
    expect(projects[0]).toMatchObject({ name: 'cluster-proj', run_count: 50 });
  });

  it('answers 401, 422 and 413 at the edge and writes nothing', async () => {
    expect((await fetch(`${cluster.gateway.url}/runs/batch`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status).toBe(401);
    const id = randomUUID();
    const bad = await call('/runs/batch', { method: 'POST', json: { post: [{ id, name: 'x', run_type: 'chain', session_name: 'edge' }, { id: 'nope', name: 1 }] } });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: { loc: unknown[] }[] }).detail.map((d) => d.loc.join('.'))).toEqual(
      expect.arrayContaining(['body.post.1.id', 'body.post.1.name', 'body.post.1.run_type']),
    );
    const big = await call('/runs', { method: 'POST', body: 'x'.repeat(26 * 1024 * 1024), headers: { 'content-type': 'application/json' } });
    expect(big.status).toBe(413);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await call(`/runs/${id}`)).status).toBe(404);
  });

  it('sends poison events to the dead-letter topic with the reason and keeps the partition moving', async () => {
    const kafka = new Kafka({ brokers: [cluster.kafka.brokers], logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    const { post } = makeRun('dlq-proj', 0);
    const workspace = ((await (await call('/sessions?limit=1')).json()) as Json[])[0].tenant_id as string;
    const good: Json = { ...post, id: randomUUID() };
    good.trace_id = good.id;
    good.dotted_order = seg(String(post.start_time), good.id as string);
    const projectId = ((await (await call('/sessions?name=cluster-proj')).json()) as Json[])[0].id as string;
    const goodEvent = {
      kind: 'run',
      op: 'post',
      tenant_id: workspace,
      id: good.id,
      received_at: new Date().toISOString(),
      fields: { session_id: projectId, name: 'after-poison', run_type: 'chain', start_time: post.start_time, trace_id: good.id, dotted_order: good.dotted_order },
    };
    // same key, so the same partition: the poison comes first
    await producer.send({
      topic: `${cluster.kafkaPrefix}runs`,
      acks: -1,
      messages: [
        { key: String(good.id), value: 'this is not json' },
        { key: String(good.id), value: JSON.stringify({ kind: 'run', op: 'post', tenant_id: workspace }) },
        { key: String(good.id), value: JSON.stringify(goodEvent) },
      ],
    });
    await producer.disconnect();
    const seen = await eventually(
      () => call(`/runs/${String(good.id)}`).then(async (r) => (r.status === 200 ? ((await r.json()) as Json) : null)),
      (r) => r !== null,
    );
    expect(seen).toMatchObject({ name: 'after-poison' });
    const consumer = kafka.consumer({ groupId: `dlq-reader-${randomUUID()}` });
    await consumer.connect();
    await consumer.subscribe({ topic: `${cluster.kafkaPrefix}runs.dlq`, fromBeginning: true });
    const letters: Json[] = [];
    await consumer.run({ eachMessage: async ({ message }) => void letters.push(JSON.parse(message.value!.toString()) as Json) });
    await eventually(async () => letters.length, (n) => n >= 2, 30_000);
    await consumer.disconnect();
    expect(letters.map((l) => l.value)).toEqual(expect.arrayContaining(['this is not json']));
    expect(letters.find((l) => l.value === 'this is not json')).toMatchObject({ topic: 'runs', reason: expect.stringMatching(/invalid JSON/) });
    expect(letters.some((l) => String(l.reason).startsWith('schema:'))).toBe(true);
  });
});
