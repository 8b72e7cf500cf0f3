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
  private closed = false;

  constructor(private readonly url: string) {}

  async start(): Promise<void> {
    const client = new Client({ connectionString: this.url });
    client.on('notification', (n) => {
      const set = this.listeners.get(n.channel as Channel);
      if (set) for (const l of [...set]) l(n.payload ?? '');
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
            for (const set of this.listeners.values()) for (const l of [...set]) l('*');
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
    const set = this.listeners.get(channel);
    if (set) for (const l of [...set]) l(payload, detail);
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
      off = this.on(channel, (p, detail) => {
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
