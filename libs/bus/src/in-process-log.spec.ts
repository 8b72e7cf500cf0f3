import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TOPICS, type RunEvent, type TopicPayload } from '@th/contracts';
import type { BusMessage } from './bus';
import { decodeRecord } from './durable-log';
import { InProcessBus } from './in-process.bus';

type Run = TopicPayload<'runs'>;
const event = (id: string): RunEvent => ({ kind: 'run', op: 'post', tenant_id: 't', id, received_at: '2026-11-24T00:00:00.000Z', fields: { name: id } });
const idOf = (m: BusMessage<Run>) => (m.value as RunEvent).id;

/** The standalone bus with its write-ahead log, on a real folder: acknowledged once on disk, handed over again after a restart. */
describe('in-process bus with a write-ahead log', () => {
  let dir: string;
  const open: InProcessBus[] = [];
  const bus = (maxBacklog?: number) => {
    const b = new InProcessBus({ log: { dir, topics: [TOPICS.runs], maxBacklog } });
    open.push(b);
    return b;
  };
  const lines = () =>
    readdirSync(dir)
      .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n'))
      .filter(Boolean)
      .map((l) => (decodeRecord(l).value as RunEvent).id);
  const gate = () => {
    let open!: () => void;
    const p = new Promise<void>((r) => (open = r));
    return { wait: p, open: () => open() };
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'th-bus-log-'));
  });
  afterEach(async () => {
    // Close without handling what is left: close() waits for busy handlers only a little.
    await Promise.all(open.splice(0).map((b) => b.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('a publish resolves once its records are on disk, before they are handled', async () => {
    const b = bus();
    const hold = gate();
    const seen: string[] = [];
    await b.subscribe(TOPICS.runs, { groupId: 'w' }, async (batch) => {
      await hold.wait;
      seen.push(...batch.map(idOf));
    });
    await b.publish(TOPICS.runs, [{ key: 'a', value: event('a') }, { key: 'b', value: event('b') }]);
    expect(seen).toEqual([]);
    expect(lines()).toEqual(['a', 'b']);
    hold.open();
    for (let i = 0; i < 200 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 5));
    expect(seen).toEqual(['a', 'b']);
  });

  it('records not handled before a crash are handed to the group after the restart, and leave the log once handled', async () => {
    const first = bus();
    await first.subscribe(TOPICS.runs, { groupId: 'w' }, () => new Promise(() => undefined)); // never finishes: the process "dies"
    await first.publish(TOPICS.runs, [{ key: 'a', value: event('a') }]);
    await first.publish(TOPICS.runs, [{ key: 'b', value: event('b') }]);
    // A torn, never-acknowledged tail (the process died while writing it).
    const [file] = readdirSync(dir);
    appendFileSync(join(dir, file), '{"t":"runs","k":"c","h":{},"v":{"ki');

    const second = bus();
    const seen: BusMessage<Run>[] = [];
    await second.subscribe(TOPICS.runs, { groupId: 'w' }, async (batch) => {
      seen.push(...batch);
    });
    for (let i = 0; i < 200 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 5));
    expect(seen.map(idOf).sort()).toEqual(['a', 'b']);
    expect(seen[0].value).toEqual(event(idOf(seen[0])));
    // handled: nothing is handed over a third time
    await second.close();
    const third = bus();
    const again: string[] = [];
    await third.subscribe(TOPICS.runs, { groupId: 'w' }, async (batch) => {
      again.push(...batch.map(idOf));
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(again).toEqual([]);
    expect(lines()).toEqual([]);
  });

  it('a failing handler is retried until it succeeds; the publisher already had its answer', async () => {
    const b = bus();
    let calls = 0;
    await b.subscribe(TOPICS.runs, { groupId: 'w' }, async () => {
      if (++calls < 3) throw new Error('store away');
    });
    await expect(b.publish(TOPICS.runs, [{ key: 'a', value: event('a') }])).resolves.toBeUndefined();
    for (let i = 0; i < 400 && calls < 3; i++) await new Promise((r) => setTimeout(r, 5));
    expect(calls).toBe(3);
  });

  it('publishes wait while the backlog of unhandled records is full', async () => {
    const b = bus(2);
    const hold = gate();
    await b.subscribe(TOPICS.runs, { groupId: 'w' }, () => hold.wait);
    await b.publish(TOPICS.runs, [{ key: 'a', value: event('a') }, { key: 'b', value: event('b') }]);
    let third = false;
    const p = b.publish(TOPICS.runs, [{ key: 'c', value: event('c') }]).then(() => (third = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(third).toBe(false);
    expect(lines()).toEqual(['a', 'b']); // nothing of the waiting publish is written yet
    hold.open();
    await p;
    expect(third).toBe(true);
  });

  it('topics not logged keep the handled-before-answer behaviour', async () => {
    const b = bus();
    const seen: string[] = [];
    await b.subscribe(TOPICS.feedback, { groupId: 'f' }, async (batch) => {
      await new Promise((r) => setTimeout(r, 20));
      seen.push(...batch.map((m) => m.key ?? ''));
    });
    await b.publish(TOPICS.feedback, [{ key: 'x', value: {} as TopicPayload<'feedback'> }]);
    expect(seen).toEqual(['x']);
    expect(lines()).toEqual([]);
  });
});
