import { Controller, Get, Module, Post, type ExecutionContext } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import type { Identity } from '@th/contracts';
import { createHttpApp } from '@th/platform';
import {
  AUTH_REFUSAL_LISTENER,
  AuthGuard,
  CurrentIdentity,
  IDENTITY_RESOLVER,
  INTERNAL_SIGNING_KEY,
  Public,
  SignedHeaderIdentityResolver,
  refusedIdentityOf,
  withRefusedIdentity,
  type AuthRefusalListener,
} from './auth.guard';
import { IDENTITY_HEADER, signIdentity } from './internal-token';
import { OrganizationScope, RequirePermissions, RequirePlan } from './permissions';

const KEY = 'guard-spec-signing-key-0123456789';

@Controller()
class ProbeController {
  @Get('workspace-data')
  data(@CurrentIdentity() identity: Identity): { tenant: string } {
    return { tenant: identity.tenant_id };
  }

  @Post('workspace-data')
  write(): { written: true } {
    return { written: true };
  }

  @Post('workspace-data/query')
  query(): { rows: [] } {
    return { rows: [] };
  }

  @Get('org')
  @OrganizationScope()
  org(@CurrentIdentity() identity: Identity): { org: string } {
    return { org: identity.organization_id };
  }

  @Post('manage')
  @OrganizationScope()
  @RequirePermissions('organization:manage')
  manage(): { ok: true } {
    return { ok: true };
  }

  @Get('export')
  @RequirePlan('plus', 'enterprise')
  exportData(): { ok: true } {
    return { ok: true };
  }

  @Get('open')
  @Public()
  open(): { ok: true } {
    return { ok: true };
  }
}

@Module({
  controllers: [ProbeController],
  providers: [
    { provide: INTERNAL_SIGNING_KEY, useValue: KEY },
    { provide: IDENTITY_RESOLVER, useClass: SignedHeaderIdentityResolver },
    { provide: APP_GUARD, useClass: AuthGuard },
  ],
})
class ProbeModule {}

const base: Identity = {
  organization_id: '11111111-1111-4111-8111-111111111111',
  tenant_id: '22222222-2222-4222-8222-222222222222',
  user_id: null,
  credential_id: '33333333-3333-4333-8333-333333333333',
  credential_type: 'api_key',
  plan: 'free',
  permissions: ['runs:read'],
};

describe('AuthGuard through HTTP: workspace scope, permissions and plans', () => {
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    app = await createHttpApp(ProbeModule, { service: 'guard-spec', logLevel: 'error', maxBodyBytes: 1024 * 1024 });
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await app?.close();
  });

  const as = async (path: string, identity: Identity | null, method = 'GET'): Promise<[number, unknown]> => {
    const res = await fetch(`${url}${path}`, { method, headers: identity ? { [IDENTITY_HEADER]: signIdentity(identity, KEY) } : {} });
    return [res.status, await res.json()];
  };

  it('needs credentials except on public routes', async () => {
    expect(await as('/workspace-data', null)).toEqual([401, { detail: 'Missing or invalid API key' }]);
    expect(await as('/open', null)).toEqual([200, { ok: true }]);
  });

  it('workspace routes need a workspace; organization routes accept an organization-scoped caller', async () => {
    expect(await as('/workspace-data', base)).toEqual([200, { tenant: base.tenant_id }]);
    const orgScoped = { ...base, tenant_id: '' };
    expect(await as('/workspace-data', orgScoped)).toEqual([403, { detail: '{"error":"org_scoped_key_requires_workspace"}' }]);
    expect(await as('/org', orgScoped)).toEqual([200, { org: base.organization_id }]);
  });

  it('by default a role without any write permission reads the workspace but cannot write', async () => {
    const viewer = { ...base, permissions: ['workspace:read', 'runs:read'] };
    expect(await as('/workspace-data', viewer)).toEqual([200, { tenant: base.tenant_id }]);
    expect(await as('/workspace-data/query', viewer, 'POST')).toEqual([201, { rows: [] }]);
    expect(await as('/workspace-data', viewer, 'POST')).toEqual([403, { detail: 'Missing permission: this role can only read the workspace' }]);
    expect(await as('/workspace-data', { ...viewer, permissions: ['runs:write'] }, 'POST')).toEqual([201, { written: true }]);
  });

  it('@RequirePermissions and @RequirePlan refuse with 403 and say what is missing', async () => {
    expect(await as('/manage', base, 'POST')).toEqual([403, { detail: 'Missing permission: organization:manage' }]);
    expect(await as('/manage', { ...base, permissions: ['organization:manage'] }, 'POST')).toEqual([201, { ok: true }]);
    expect(await as('/export', base)).toEqual([403, { detail: 'This feature needs the plus or enterprise plan; the organization is on free' }]);
    expect(await as('/export', { ...base, plan: 'plus' })).toEqual([200, { ok: true }]);
  });
});

/** A listener that keeps what it is told (and, when asked, fails: a failing listener must not change the refusal). */
class RecordingListener implements AuthRefusalListener {
  readonly calls: { path: string; identity: Identity | null; error: string }[] = [];
  failing = false;
  async refused(ctx: ExecutionContext, identity: Identity | null, err: unknown): Promise<void> {
    this.calls.push({ path: ctx.switchToHttp().getRequest<{ path: string }>().path, identity, error: err instanceof Error ? err.message : String(err) });
    if (this.failing) throw new Error('listener down');
  }
}
const listener = new RecordingListener();

@Module({
  controllers: [ProbeController],
  providers: [
    { provide: INTERNAL_SIGNING_KEY, useValue: KEY },
    { provide: IDENTITY_RESOLVER, useClass: SignedHeaderIdentityResolver },
    { provide: AUTH_REFUSAL_LISTENER, useValue: listener },
    { provide: APP_GUARD, useClass: AuthGuard },
  ],
})
class ListenedModule {}

describe('AuthGuard refusal listener', () => {
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    app = await createHttpApp(ListenedModule, { service: 'guard-spec', logLevel: 'error', maxBodyBytes: 1024 * 1024 });
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await app?.close();
  });

  const as = async (path: string, headers: Record<string, string>, method = 'GET'): Promise<number> => (await fetch(`${url}${path}`, { method, headers })).status;
  const signed = (identity: Identity) => ({ [IDENTITY_HEADER]: signIdentity(identity, KEY) });

  it('is told once per refused request, with the identity when one was resolved, and never about allowed or public ones', async () => {
    listener.calls.length = 0;
    expect(await as('/workspace-data', signed(base))).toBe(200);
    expect(await as('/open', {})).toBe(200);
    expect(await as('/open', { [IDENTITY_HEADER]: 'garbage' })).toBe(200);
    expect(listener.calls).toEqual([]);

    expect(await as('/manage', signed(base), 'POST')).toBe(403);
    expect(await as('/workspace-data', {})).toBe(401);
    expect(await as('/workspace-data', { [IDENTITY_HEADER]: 'garbage' })).toBe(401);
    expect(listener.calls).toEqual([
      { path: '/manage', identity: base, error: 'Missing permission: organization:manage' },
      { path: '/workspace-data', identity: null, error: 'Missing or invalid API key' },
      { path: '/workspace-data', identity: null, error: 'Invalid internal identity' },
    ]);
  });

  it('a failing listener does not change the refusal', async () => {
    listener.failing = true;
    try {
      expect(await as('/export', signed(base))).toBe(403);
    } finally {
      listener.failing = false;
    }
  });

  it('withRefusedIdentity attaches the credential to an error without changing it', () => {
    const err = withRefusedIdentity(new Error('nope'), base);
    expect(err.message).toBe('nope');
    expect(Object.keys(err)).toEqual([]);
    expect(refusedIdentityOf(err)).toEqual(base);
    expect(refusedIdentityOf(new Error('x'))).toBeNull();
    expect(refusedIdentityOf(undefined)).toBeNull();
  });
});
