import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stable address per deployment that forwards each HTTP request to whichever revision's server is active.
 * Per request (not per connection), so a client's kept-alive connection survives the switch to a new revision.
 */
export class FrontProxy {
  private target: number | null = null;
  private readonly server: http.Server;
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  constructor() {
    this.server = http.createServer((req, res) => {
      if (this.target === null) {
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"detail":"No revision is deployed yet"}');
        req.resume();
        return;
      }
      const up = http.request({ host: '127.0.0.1', port: this.target, method: req.method, path: req.url, headers: req.headers, agent: this.agent }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on('error', (err) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: `agent server unavailable: ${err.message}` }));
        else res.destroy();
      });
      req.pipe(up);
    });
  }
  listen(host: string, port: number): Promise<number> {
    return new Promise((res, rej) => {
      this.server.once('error', rej);
      this.server.listen(port, host, () => res((this.server.address() as AddressInfo).port));
    });
  }
  point(port: number | null): void {
    this.target = port;
  }
  close(): Promise<void> {
    this.server.closeAllConnections();
    this.agent.destroy();
    return new Promise((r) => this.server.close(() => r()));
  }
}
