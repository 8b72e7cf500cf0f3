import { Body, Controller, Delete, Get, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import {
  apiKeyCreateSchema,
  idParamSchema,
  loginRequestSchema,
  sessionCreateSchema,
  type ApiKeyCreated,
  type ApiKeyInfo,
  type Identity,
  type LoginResponse,
  type SessionInfo,
} from '@th/contracts';
import { CurrentIdentity, OrganizationScope, Public, SESSION_COOKIE } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import { parseOrThrow } from '@th/platform';
import { AdminAudit } from './admin-audit';
import { CredentialsService } from './credentials.service';
import { SessionsService } from './sessions.service';
import { assertSameOriginWrite } from '../identity/identity.service';

const created = (k: ApiKeyCreated) => [{ type: k.kind, id: k.id }];

/** Workspace API keys: X-API-Key credentials of one workspace. */
@Controller('api-key')
@OrganizationScope()
export class ApiKeysController {
  constructor(
    private readonly credentials: CredentialsService,
    private readonly audit: AdminAudit,
  ) {}

  @Get()
  list(@CurrentIdentity() identity: Identity): Promise<ApiKeyInfo[]> {
    return this.credentials.listKeys(identity, 'api_key');
  }

  @Post()
  @TrackedOperation()
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<ApiKeyCreated> {
    return this.audit.run(identity, req, () => this.credentials.createKey(identity, 'api_key', parseOrThrow(apiKeyCreateSchema, body ?? {}, ['body'])), created);
  }

  // Personal access tokens: registered before ':id' so 'current' is not read as a key id.
  @Get('current')
  @OrganizationScope()
  listPersonal(@CurrentIdentity() identity: Identity): Promise<ApiKeyInfo[]> {
    return this.credentials.listKeys(identity, 'personal_access_token');
  }

  @Post('current')
  @TrackedOperation()
  @HttpCode(200)
  @OrganizationScope()
  createPersonal(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<ApiKeyCreated> {
    return this.audit.run(identity,
      req,
      () => this.credentials.createKey(identity, 'personal_access_token', parseOrThrow(apiKeyCreateSchema, body ?? {}, ['body'])),
      created,
    );
  }

  @Delete('current/:id')
  @TrackedOperation()
  @OrganizationScope()
  async deletePersonal(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Req() req: Request): Promise<Record<string, never>> {
    await this.audit.run(identity, req, async () => {
      const { id } = parseOrThrow(idParamSchema, params, ['path']);
      await this.credentials.deleteKey(identity, 'personal_access_token', id);
    }, undefined, resource('personal_access_token', params.id));
    return {};
  }

  @Delete(':id')
  @TrackedOperation()
  async delete(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Req() req: Request): Promise<Record<string, never>> {
    await this.audit.run(identity, req, async () => {
      const { id } = parseOrThrow(idParamSchema, params, ['path']);
      await this.credentials.deleteKey(identity, 'api_key', id);
    }, undefined, resource('api_key', params.id));
    return {};
  }
}

/** Service keys: organization credentials, scoped to one workspace or (workspace_id null) to any. */
@Controller('service-keys')
@OrganizationScope()
export class ServiceKeysController {
  constructor(
    private readonly credentials: CredentialsService,
    private readonly audit: AdminAudit,
  ) {}

  @Get()
  list(@CurrentIdentity() identity: Identity): Promise<ApiKeyInfo[]> {
    return this.credentials.listKeys(identity, 'service_key');
  }

  @Post()
  @TrackedOperation()
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<ApiKeyCreated> {
    return this.audit.run(identity, req, () => this.credentials.createKey(identity, 'service_key', parseOrThrow(apiKeyCreateSchema, body ?? {}, ['body'])), created);
  }

  @Delete(':id')
  @TrackedOperation()
  async delete(@CurrentIdentity() identity: Identity, @Param() params: Record<string, string>, @Req() req: Request): Promise<Record<string, never>> {
    await this.audit.run(identity, req, async () => {
      const { id } = parseOrThrow(idParamSchema, params, ['path']);
      await this.credentials.deleteKey(identity, 'service_key', id);
    }, undefined, resource('service_key', params.id));
    return {};
  }
}

/**
 * The session cookie: httpOnly (the page's scripts never read it), SameSite=Strict (no cross-site request
 * carries it), Secure when the request came over TLS (directly or as X-Forwarded-Proto says).
 */
function sessionCookie(req: Request, value: string, maxAgeSeconds: number): string {
  const secure = req.secure || String(req.headers['x-forwarded-proto'] ?? '').split(',')[0].trim() === 'https';
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}

/**
 * Basic-auth users sign in here for a session bearer token (HS256 JWT); the web app signs in with
 * /auth/session, which answers with the session cookie instead.
 */
@Controller('auth')
export class AuthController {
  constructor(private readonly sessions: SessionsService) {}

  @Post('login')
  @HttpCode(200)
  @Public()
  login(@Body() body: unknown): Promise<LoginResponse> {
    return this.sessions.login(parseOrThrow(loginRequestSchema, body ?? {}, ['body']));
  }

  @Post('session')
  @HttpCode(200)
  @Public()
  async createSession(@Body() body: unknown, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<SessionInfo> {
    // Same rule as cookie-authenticated writes: no cross-site page can sign a browser in to its own account.
    assertSameOriginWrite(req.method, req.headers);
    const { token, info } = await this.sessions.createSession(parseOrThrow(sessionCreateSchema, body ?? {}, ['body']));
    res.setHeader('Set-Cookie', sessionCookie(req, token, this.sessions.sessionTtlSeconds));
    return info;
  }

  @Get('session')
  @OrganizationScope()
  session(@CurrentIdentity() identity: Identity): SessionInfo {
    return { organization_id: identity.organization_id, tenant_id: identity.tenant_id, user_id: identity.user_id, credential_type: identity.credential_type };
  }

  @Delete('session')
  @HttpCode(200)
  @Public()
  logout(@Req() req: Request, @Res({ passthrough: true }) res: Response): Record<string, never> {
    assertSameOriginWrite(req.method, req.headers);
    res.setHeader('Set-Cookie', sessionCookie(req, '', 0));
    return {};
  }
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The resource a path names, when it is a UUID (the audit event lists only UUIDs). */
export function resource(type: string, id: string | undefined): { type: string; id: string }[] {
  return id && UUID_RE.test(id) ? [{ type, id: id.toLowerCase() }] : [];
}
