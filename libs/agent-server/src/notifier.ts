import { Logger } from '@nestjs/common';
import { Client } from 'pg';
import { CHANNELS } from './agent.repository';

type Channel = (typeof CHANNELS)[keyof typeof CHANNELS];
type Listener = (payload: string, detail?: unknown) => void;

/**
 * One LISTEN connection per process: wakes workers when runs are queued, join/wait when runs end,
 * stream readers when events are written, and executors when their run is cancelled. After a lost
 * connection it reconnects and calls every listener with '*' so waiters re-read the database.
 */
export class Notifier {
  private readonly logger = new Logger('agent-notifier');
  private client: Client | null = null;
  private readonly listeners = new Map<Channel, Set<Listener>>();
  /** Waiters for one payload (a run id) by channel and payload: a notification calls only its own (see next). */
  private readonly keyed = new Map<Channel, Map<string, Set<Listener>>>();
  private closed = false;

  constructor(private readonly url: string) {}

  async start(): Promise<void> {
    const client = new Client({ connectionString: this.url });
    client.on('notification', (n) => {
      this.dispatch(n.channel as Channel, n.payload ?? '', undefined);
    });
    client.on('error', (err) => {
      this.logger.warn({ msg: 'notification connection lost', error: err.message });
      this.reconnect(client);
    });
    client.on('end', () => this.reconnect(client));
    await client.connect();
    for (const ch of Object.values(CHANNELS)) await client.query(`LISTEN ${ch}`);
    this.client = client;
  }

  private reconnect(from: Client): void {
    if (this.closed || this.client !== from) return;
    this.client = null;
    const attempt = (delay: number): void => {
      if (this.closed) return;
      setTimeout(() => {
        this.start().then(
          () => {
            for (const ch of new Set([...this.listeners.keys(), ...this.keyed.keys()])) this.dispatch(ch, '*', undefined);
          },
          () => attempt(Math.min(delay * 2, 5_000)),
        );
      }, delay).unref();
    };
    attempt(200);
  }

  /**
   * Tells this process's listeners at once what a committed change of this process means (e.g. a run this
   * process ended, with its final row): they need not wait for the NOTIFY (which still follows, for every
   * process) nor read the row back.
   */
  publishLocal(channel: Channel, payload: string, detail: unknown): void {
    this.dispatch(channel, payload, detail);
  }

  /** Calls the channel's listeners, and the waiters for this payload (all of them for '*'). */
  private dispatch(channel: Channel, payload: string, detail: unknown): void {
    const set = this.listeners.get(channel);
    if (set?.size) for (const l of [...set]) l(payload, detail);
    const byKey = this.keyed.get(channel);
    if (!byKey?.size) return;
    if (payload === '*') {
      for (const waiters of [...byKey.values()]) for (const l of [...waiters]) l(payload, detail);
    } else {
      const waiters = byKey.get(payload);
      if (waiters) for (const l of [...waiters]) l(payload, detail);
    }
  }

  /** A listener for one payload only: a notification for another key does not call it. */
  private onKey(channel: Channel, key: string, listener: Listener): () => void {
    let byKey = this.keyed.get(channel);
    if (!byKey) this.keyed.set(channel, (byKey = new Map()));
    let set = byKey.get(key);
    if (!set) byKey.set(key, (set = new Set()));
    set.add(listener);
    const waiters = set;
    return () => {
      waiters.delete(listener);
      if (waiters.size === 0 && byKey.get(key) === waiters) byKey.delete(key);
    };
  }

  on(channel: Channel, listener: Listener): () => void {
    let set = this.listeners.get(channel);
    if (!set) this.listeners.set(channel, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  /**
   * Resolves on the next notification on `channel` whose payload is `key` (or on a reconnect), or when
   * `signal` aborts; with the detail of a local publication, if that came first.
   */
  next(channel: Channel, key: string, signal?: AbortSignal): { promise: Promise<unknown>; cancel(): void } {
    let off: () => void = () => undefined;
    let onAbort: () => void = () => undefined;
    const promise = new Promise<unknown>((resolve) => {
      off = this.onKey(channel, key, (p, detail) => {
        if (p === key || p === '*') {
          off();
          signal?.removeEventListener('abort', onAbort);
          resolve(detail);
        }
      });
      onAbort = () => {
        off();
        resolve(undefined);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    return {
      promise,
      cancel: () => {
        off();
        signal?.removeEventListener('abort', onAbort);
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => undefined);
  }
}
