import type { Identity, ProjectResolveRequest, ProjectResolveResponse } from '@th/contracts';
import { projectResolveResponseSchema } from '@th/contracts';
import { signIdentity, IDENTITY_HEADER } from '@th/auth';
import { DomainError, ErrorCode } from '@th/platform';

/** Where ingest learns project ids: the query service owns projects. */
export abstract class ProjectDirectory {
  /** Resolves names to ids (creating missing projects) and reports which ids do not exist. */
  abstract resolve(identity: Identity, req: ProjectResolveRequest): Promise<ProjectResolveResponse>;
}

/** Cluster form: asks the query service over HTTP, with the caller's identity signed. */
export class HttpProjectDirectory extends ProjectDirectory {
  constructor(
    private readonly queryUrl: string,
    private readonly signingKey: string,
  ) {
    super();
  }
  async resolve(identity: Identity, req: ProjectResolveRequest): Promise<ProjectResolveResponse> {
    const res = await fetch(`${this.queryUrl}/internal/projects/resolve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [IDENTITY_HEADER]: signIdentity(identity, this.signingKey) },
      body: JSON.stringify(req),
    }).catch((err: unknown) => {
      throw new DomainError(ErrorCode.Unavailable, 'project service unreachable', undefined, { cause: err });
    });
    if (!res.ok) throw new DomainError(ErrorCode.Unavailable, `project service answered ${res.status}`);
    return projectResolveResponseSchema.parse(await res.json());
  }
}

/** Remembers resolved names and known ids for a minute, so the ingest hot path rarely asks. */
export class CachedProjectDirectory extends ProjectDirectory {
  private readonly names = new Map<string, { id: string; at: number }>();
  private readonly ids = new Map<string, number>();
  constructor(
    private readonly inner: ProjectDirectory,
    private readonly ttlMs = 60_000,
  ) {
    super();
  }
  async resolve(identity: Identity, req: ProjectResolveRequest): Promise<ProjectResolveResponse> {
    const now = Date.now();
    const t = identity.tenant_id;
    const byName: Record<string, string> = {};
    const names: string[] = [];
    for (const n of new Set(req.names)) {
      const hit = this.names.get(`${t}:${n}`);
      if (hit && now - hit.at < this.ttlMs) byName[n] = hit.id;
      else names.push(n);
    }
    const ids = [...new Set(req.ids)].filter((id) => {
      const at = this.ids.get(`${t}:${id}`);
      return !(at && now - at < this.ttlMs);
    });
    if (names.length === 0 && ids.length === 0) return { by_name: byName, missing_ids: [] };
    const res = await this.inner.resolve(identity, { names, ids });
    for (const [n, id] of Object.entries(res.by_name)) {
      this.names.set(`${t}:${n}`, { id, at: now });
      byName[n] = id;
    }
    const missing = new Set(res.missing_ids);
    for (const id of ids) if (!missing.has(id)) this.ids.set(`${t}:${id}`, now);
    if (this.names.size > 100_000) this.names.clear();
    if (this.ids.size > 100_000) this.ids.clear();
    return { by_name: byName, missing_ids: res.missing_ids };
  }
  /** Forget a project (deleted or renamed). */
  invalidate(tenantId: string): void {
    for (const k of this.names.keys()) if (k.startsWith(`${tenantId}:`)) this.names.delete(k);
    for (const k of this.ids.keys()) if (k.startsWith(`${tenantId}:`)) this.ids.delete(k);
  }
}
