import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';

/** A TCP server on 127.0.0.1 that counts the connections it gets and closes each at once. */
export interface ConnectionCounter {
  port: number;
  connections(): number;
  close(): Promise<void>;
}

export async function startConnectionCounter(): Promise<ConnectionCounter> {
  let count = 0;
  const server: Server = createServer((s) => {
    count++;
    s.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => count,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
