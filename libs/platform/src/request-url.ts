/** The parts of an HTTP request the caller's address is read from (express's Request has them). */
export interface RequestAddress {
  headers: Record<string, string | string[] | undefined>;
  protocol?: string;
}

/** The address the caller reached us at (behind a proxy: its forwarded host), for links handed back to it. */
export function requestBaseUrl(req: RequestAddress): string {
  const proto = String(req.headers['x-forwarded-proto'] ?? req.protocol ?? 'http').split(',')[0].trim();
  const host = String(req.headers['x-forwarded-host'] ?? req.headers.host ?? '127.0.0.1').split(',')[0].trim();
  return `${proto}://${host}`;
}
