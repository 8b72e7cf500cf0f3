import { TOPICS, type RunEvent, type TopicPayload } from '@th/contracts';
import type { BatchHooks, BusMessage } from './bus';
import { InProcessBus } from './in-process.bus';

type Run = TopicPayload<'runs'>;
const event = (id: string): RunEvent => ({ kind: 'run', op: 'post', tenant_id: 't', id, received_at: '2026-11-24T00:00:00.000Z', fields: { name: id } });
const idOf = (m: BusMessage<Run>) => (m.value as RunEvent).id;
const publishOne = (b: InProcessBus, id: string) => b.publish(TOPICS.runs, [{ key: id, value: event(id) }]);
const gate = () => {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open: () => open() };
};
const until = async (cond: () => boolean) => {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
};

/** The standalone bus without its log: batches, and the overlap a handler allows once it is writing. */
describe('in-process bus', () => {
  const open: InProcessBus[] = [];
  const bus = () => {
    const b = new InProcessBus();
    open.push(b);
    return b;
  };
  afterEach(async () => {
    await Promise.all(open.splice(0).map((b) => b.close()));
  });

  it('while a batch is handled, publishes queue up and go over together in the next one', async () => {
    const b = bus();
    const batches: string[][] = [];
    const holds = [gate(), gate()];
    await b.subscribe(TOPICS.runs, { groupId: 'w', concurrency: 4 }, async (batch) => {
      batches.push(batch.map(idOf));
      await holds[batches.length - 1]?.wait;
    });
    const first = publishOne(b, 'a');
    await until(() => batches.length === 1);
    const rest = ['b', 'c', 'd'].map((id) => publishOne(b, id));
    await new Promise((r) => setTimeout(r, 30));
    expect(batches).toEqual([['a']]); // the handler is still busy: no second one started
    holds[0].open();
    await first;
    await until(() => batches.length === 2);
    expect(batches[1]).toEqual(['b', 'c', 'd']);
    holds[1].open();
    await Promise.all(rest);
  });

  it('once the handler is writing, the next batch starts; each publish still resolves only when its own batch is done', async () => {
    const b = bus();
    const batches: string[][] = [];
    const writes = [gate(), gate()];
    await b.subscribe(TOPICS.runs, { groupId: 'w', concurrency: 4 }, async (batch, hooks?: BatchHooks) => {
      const n = batches.push(batch.map(idOf));
      hooks?.writing();
      hooks?.writing(); // idempotent
      await writes[n - 1].wait;
    });
    let firstDone = false;
    const first = publishOne(b, 'a').then(() => (firstDone = true));
    await until(() => batches.length === 1);
    const second = publishOne(b, 'b');
    await until(() => batches.length === 2); // started while the first is still writing
    expect(batches).toEqual([['a'], ['b']]);
    expect(firstDone).toBe(false);
    writes[1].open();
    await second;
    expect(firstDone).toBe(false);
    writes[0].open();
    await first;
  });

  it('writing handlers still count against the concurrency; what queued meanwhile goes over when one finishes', async () => {
    const b = bus();
    const batches: string[][] = [];
    const writes = [gate(), gate(), gate()];
    await b.subscribe(TOPICS.runs, { groupId: 'w', concurrency: 2 }, async (batch, hooks?: BatchHooks) => {
      const n = batches.push(batch.map(idOf));
      hooks?.writing();
      await writes[n - 1].wait;
    });
    const pubs = [publishOne(b, 'a')];
    await until(() => batches.length === 1);
    pubs.push(publishOne(b, 'b'));
    await until(() => batches.length === 2);
    pubs.push(publishOne(b, 'c'), publishOne(b, 'd'));
    await new Promise((r) => setTimeout(r, 30));
    expect(batches.length).toBe(2); // two in flight: the third waits for a slot
    writes[0].open();
    await until(() => batches.length === 3);
    expect(batches[2]).toEqual(['c', 'd']);
    writes[1].open();
    writes[2].open();
    await Promise.all(pubs);
  });
});
