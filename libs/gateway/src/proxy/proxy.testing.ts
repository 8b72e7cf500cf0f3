import { createHash } from 'node:crypto';
import * as http from 'node:http';
import type * as net from 'node:net';

/** Test helpers of the proxy specs. */

/**
 * Test route of the proxy specs: answers `status` with what arrived of the request body (its length and
 * SHA-256) and how it was framed (Transfer-Encoding, Content-Length).
 */
export function uploadDigest(status: number): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) => {
    const hash = createHash('sha256');
    let n = 0;
    req.on('data', (c: Buffer) => {
      hash.update(c);
      n += c.length;
    });
    req.on('end', () => {
      const body = JSON.stringify({ n, sha: hash.digest('hex'), te: req.headers['transfer-encoding'] ?? null, cl: req.headers['content-length'] ?? null });
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  };
}

/** Listens on a free loopback port; resolves with the port. */
export async function listen(server: http.Server | net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

/** Closes the server, dropping its kept-alive connections. */
export const closeServer = (server: http.Server | net.Server) =>
  new Promise<void>((resolve) => {
    if (server instanceof http.Server) server.closeAllConnections();
    server.close(() => resolve());
  });
