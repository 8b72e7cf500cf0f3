import { createHash } from 'node:crypto';
import type * as http from 'node:http';

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
