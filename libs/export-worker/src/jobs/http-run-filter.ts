import { IDENTITY_HEADER, signIdentity } from '@th/auth';
import { runQueryResponseSchema, type Identity } from '@th/contracts';
import { DomainError, ErrorCode, ValidationFailed } from '@th/platform';
import { ExportRunFilter } from './run-filter';

/** Cluster form: the query service evaluates the filter through POST /runs/query, with the export owner's identity signed. */
export class HttpExportRunFilter extends ExportRunFilter {
  constructor(
    private readonly queryUrl: string,
    private readonly signingKey: string,
  ) {
    super();
  }

  async validate(identity: Identity, sessionId: string, filter: string): Promise<void> {
    await this.page(identity, { session: [sessionId], filter, select: ['id'], limit: 1, order: 'asc' });
  }

  async matching(identity: Identity, sessionId: string, ids: string[], filter: string): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < ids.length; i += 1000) {
      let cursor: string | null = null;
      for (let pages = 0; pages < 100; pages++) {
        const res = await this.page(identity, { session: [sessionId], id: ids.slice(i, i + 1000), filter, select: ['id'], limit: 1000, order: 'asc', cursor });
        for (const r of res.runs) if (typeof r.id === 'string') out.add(r.id);
        cursor = res.cursors.next;
        if (!cursor) break;
      }
    }
    return out;
  }

  private async page(identity: Identity, body: Record<string, unknown>) {
    const res = await fetch(`${this.queryUrl}/runs/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [IDENTITY_HEADER]: signIdentity(identity, this.signingKey) },
      body: JSON.stringify(body),
    }).catch((err: unknown) => {
      throw new DomainError(ErrorCode.Unavailable, 'query service unreachable', undefined, { cause: err });
    });
    if (res.status === 422) {
      const detail = ((await res.json()) as { detail?: { msg?: string }[] }).detail ?? [];
      throw new ValidationFailed(detail.map((d) => ({ loc: ['body', 'filter'], msg: d.msg ?? 'Invalid filter', type: 'value_error' })));
    }
    if (!res.ok) throw new DomainError(ErrorCode.Unavailable, `query service answered ${res.status}`);
    return runQueryResponseSchema.parse(await res.json());
  }
}
