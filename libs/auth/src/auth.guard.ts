import { CanActivate, ExecutionContext, Inject, Injectable, Optional, Provider, SetMetadata, createParamDecorator } from '@nestjs/common';
import { APP_GUARD, Reflector } from '@nestjs/core';
import type { Request } from 'express';
import type { Identity, Plan } from '@th/contracts';
import { DomainError, ErrorCode, unauthorized } from '@th/platform';
import { IDENTITY_HEADER, IdentityVerifier } from './internal-token';
import { ORGANIZATION_SCOPE_KEY, REQUIRED_PERMISSIONS_KEY, REQUIRED_PLANS_KEY, assertDefaultWorkspaceAccess, assertPermissions, assertPlan } from './permissions';

export interface IdentityResolver {
  /** Returns the caller's identity, null when the request carries no credentials; throws on bad ones. */
  resolve(req: Request): Promise<Identity | null>;
}
export const IDENTITY_RESOLVER = Symbol('IDENTITY_RESOLVER');
export const INTERNAL_SIGNING_KEY = Symbol('INTERNAL_SIGNING_KEY');

export type AuthenticatedRequest = Request & { identity?: Identity };

/**
 * Told by AuthGuard about every request it refuses (401/403), before the error is returned. The bus
 * module registers one that records a Failure for routes marked as tracked operations (libs/auth
 * cannot depend on libs/bus, so the dependency points this way). Optional: without one, nothing happens.
 */
export interface AuthRefusalListener {
  /** `identity` is the caller's when one was resolved (see refusedIdentityOf), else null. Must not throw. */
  refused(ctx: ExecutionContext, identity: Identity | null, err: unknown): Promise<void>;
}
export const AUTH_REFUSAL_LISTENER = Symbol('AUTH_REFUSAL_LISTENER');

const REFUSED_IDENTITY = Symbol('th:refused-identity');
/**
 * Attaches the credential's identity to an error a resolver throws after the credential itself was
 * verified (e.g. a valid key asking for a workspace it may not act in), so the refusal can be
 * attributed to its actor and organization. Returns the error.
 */
export function withRefusedIdentity<E extends Error>(err: E, identity: Identity): E {
  Object.defineProperty(err, REFUSED_IDENTITY, { value: identity, enumerable: false });
  return err;
}
/** The identity withRefusedIdentity attached to `err`, or null. */
export function refusedIdentityOf(err: unknown): Identity | null {
  return err && typeof err === 'object' ? ((err as { [REFUSED_IDENTITY]?: Identity })[REFUSED_IDENTITY] ?? null) : null;
}

const PUBLIC_KEY = 'th:public';
/** Marks a route as reachable without credentials (health, /info, /ok). */
export const Public = () => SetMetadata(PUBLIC_KEY, true);

export const CurrentIdentity = createParamDecorator((_data: unknown, ctx: ExecutionContext): Identity => {
  const req = ctx.switchToHttp().getRequest<AuthenticatedRequest>();
  if (!req.identity) throw unauthorized();
  return req.identity;
});

@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(IDENTITY_RESOLVER) private readonly resolver: IdentityResolver,
    @Optional() @Inject(AUTH_REFUSAL_LISTENER) private readonly refusals?: AuthRefusalListener,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<AuthenticatedRequest>();
    const isPublic = this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, [ctx.getHandler(), ctx.getClass()]);
    if (isPublic) {
      const identity = await this.resolver.resolve(req).catch(() => null);
      if (identity) req.identity = identity;
      return true;
    }
    let identity: Identity | null = null;
    try {
      identity = await this.resolver.resolve(req);
      if (identity) req.identity = identity;
      this.authorize(ctx, req, identity);
      return true;
    } catch (err) {
      if (this.refusals) await this.refusals.refused(ctx, identity ?? refusedIdentityOf(err), err).catch(() => undefined);
      throw err;
    }
  }

  private authorize(ctx: ExecutionContext, req: AuthenticatedRequest, identity: Identity | null): void {
    if (!identity) throw unauthorized('Missing or invalid API key');
    const targets = [ctx.getHandler(), ctx.getClass()];
    const orgScoped = this.reflector.getAllAndOverride<boolean>(ORGANIZATION_SCOPE_KEY, targets);
    // An organization-scoped credential must name its workspace for workspace routes.
    if (!orgScoped && identity.tenant_id === '') throw new DomainError(ErrorCode.Forbidden, '{"error":"org_scoped_key_requires_workspace"}');
    const required = this.reflector.getAllAndOverride<string[] | undefined>(REQUIRED_PERMISSIONS_KEY, targets);
    if (required && required.length > 0) assertPermissions(identity, required);
    else if (!orgScoped) assertDefaultWorkspaceAccess(identity, req.method, req.path);
    const plans = this.reflector.getAllAndOverride<Plan[] | undefined>(REQUIRED_PLANS_KEY, targets);
    if (plans && plans.length > 0) assertPlan(identity, plans);
  }
}

/** Services behind the gateway: trust only the gateway's signed identity header. */
@Injectable()
export class SignedHeaderIdentityResolver implements IdentityResolver {
  /** Verified tokens are remembered (bounded LRU keyed by the token; the age is checked on every request). */
  private readonly verifier: IdentityVerifier;
  constructor(@Inject(INTERNAL_SIGNING_KEY) key: string) {
    this.verifier = new IdentityVerifier(key);
  }
  async resolve(req: Request): Promise<Identity | null> {
    const token = req.headers[IDENTITY_HEADER];
    if (typeof token !== 'string') return null;
    const identity = this.verifier.verify(token);
    if (!identity) throw unauthorized('Invalid internal identity');
    return identity;
  }
}

/**
 * What a service behind the gateway registers to authenticate every route: the cluster's signing key, the
 * signed-header resolver and the guard.
 */
export function signedIdentityProviders(signingKey: string): Provider[] {
  return [
    { provide: INTERNAL_SIGNING_KEY, useValue: signingKey },
    { provide: IDENTITY_RESOLVER, useClass: SignedHeaderIdentityResolver },
    { provide: APP_GUARD, useClass: AuthGuard },
  ];
}
