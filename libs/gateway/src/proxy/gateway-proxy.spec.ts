import { UNCONFIGURED_UPSTREAM, isPublicRoute, routeFor } from './gateway-proxy';

const up = { ingest: 'http://i', query: 'http://q', controlPlane: 'http://cp' };

describe('gateway routes without an API key', () => {
  it('dataset share reads go to query, public; other methods on /public are not proxied', () => {
    for (const path of ['/public/tok/datasets', '/api/v1/public/tok/examples', '/api/public/tok/examples']) {
      expect(routeFor('GET', path, up)).toBe('http://q');
      expect(isPublicRoute('GET', path)).toBe(true);
    }
    expect(routeFor('POST', '/public/tok/datasets', up)).toBeNull();
    expect(isPublicRoute('POST', '/public/tok/datasets')).toBe(false);
  });

  it('the v2 REST client and run sharing go to query; only the share-token reads are public', () => {
    for (const [method, path] of [['POST', '/api/v2/runs/query'], ['GET', '/api/v2/runs/r'], ['GET', '/api/v2/runs/r/url'], ['POST', '/api/v2/runs/r/share'], ['DELETE', '/api/v2/runs/t/share'], ['POST', '/api/v2/traces/query'], ['GET', '/api/v2/traces/t/runs'], ['POST', '/api/v2/threads/query'], ['POST', '/api/v2/threads/stats'], ['GET', '/api/v2/threads/c/traces'], ['GET', '/api/v2/threads/c/stats'], ['DELETE', '/api/v2/threads/c/share'], ['GET', '/api/v2/sessions'], ['GET', '/api/v2/datasets'], ['POST', '/api/v2/datasets/d/experiment-runs'], ['PUT', '/api/v1/runs/r/share'], ['DELETE', '/runs/r/share'], ['GET', '/api/v1/runs/r/share']] as const) {
      expect(routeFor(method, path, up)).toBe('http://q');
      expect(isPublicRoute(method, path)).toBe(false);
    }
    for (const [method, path] of [['GET', '/api/v2/public/tok/run/r'], ['POST', '/api/v2/public/tok/runs/query'], ['GET', '/api/v1/public/tok/run'], ['GET', '/public/tok/run/r'], ['POST', '/api/v1/public/tok/runs/query']] as const) {
      expect(routeFor(method, path, up)).toBe('http://q');
      expect(isPublicRoute(method, path)).toBe(true);
    }
    expect(isPublicRoute('DELETE', '/api/v2/public/tok/run/r')).toBe(false);
    expect(routeFor('PATCH', '/api/v1/runs/r', up)).toBe('http://i');
  });

  it('the prompt hub goes to query, with an API key', () => {
    for (const [method, path] of [['GET', '/api/v1/repos/'], ['POST', '/repos'], ['PATCH', '/api/v1/repos/-/p'], ['POST', '/api/v1/repos/-/p/tags'], ['GET', '/api/v1/commits/o/p/latest'], ['POST', '/commits/-/p'], ['POST', '/api/v1/likes/o/p'], ['POST', '/api/v1/prompt-webhooks/test'], ['DELETE', '/api/v1/prompt-webhooks/x'], ['POST', '/api/v1/platform/hub/repos/-/a/directories/commits'], ['GET', '/v1/platform/hub/repos/o/a/directories']] as const) {
      expect(routeFor(method, path, up)).toBe('http://q');
      expect(isPublicRoute(method, path)).toBe(false);
    }
    // The tenant handle belongs to the workspace: the gateway serves /settings itself.
    expect(routeFor('GET', '/api/v1/settings', up)).toBeNull();
    expect(routeFor('POST', '/settings/handle', up)).toBeNull();
    expect(routeFor('GET', '/repository', up)).toBeNull();
  });

  it("OTLP traces go to ingest at /otel/v1/traces and at /otel (the Python SDK's OTEL mode), with an API key", () => {
    for (const path of ['/otel/v1/traces', '/api/v1/otel/v1/traces', '/otel', '/api/v1/otel']) {
      expect(routeFor('POST', path, up)).toBe('http://i');
      expect(isPublicRoute('POST', path)).toBe(false);
    }
  });

  it('the upload PUT and the push webhook go to the control plane, public; nothing else there is', () => {
    const object = '/v2/uploads/deployments/d/sources/x.tar.gz';
    expect(routeFor('PUT', object, up)).toBe('http://cp');
    expect(isPublicRoute('PUT', object)).toBe(true);
    expect(routeFor('GET', object, up)).toBeNull();
    expect(isPublicRoute('GET', object)).toBe(false);
    const hook = '/v1/integrations/git_host/3f1c0a52-8a3e-4d57-9a34-1e0c6f1d2b7a/webhook';
    expect(routeFor('POST', hook, up)).toBe('http://cp');
    expect(isPublicRoute('POST', hook)).toBe(true);
    expect(isPublicRoute('POST', '/v1/integrations/git_host/install')).toBe(false);
    expect(isPublicRoute('GET', '/v1/integrations/git_host/install')).toBe(false);
    expect(isPublicRoute('POST', '/v1/integrations/git_host/a/b/webhook')).toBe(false);
    // Without a control plane configured the gateway answers 503 (UNCONFIGURED_UPSTREAM), key or not.
    expect(routeFor('PUT', object, { ingest: 'http://i', query: 'http://q' })).toBe(UNCONFIGURED_UPSTREAM);
  });

  it('every other proxied route needs a key', () => {
    for (const [m, p] of [
      ['GET', '/api/v1/sessions/x'],
      ['POST', '/runs/batch'],
      ['GET', '/api/v1/datasets'],
      ['POST', '/v2/deployments'],
      ['POST', '/deployments/x/upload-url'],
      ['PUT', '/api/v1/datasets/x/share'],
      ['GET', '/api/v1/publicity'],
    ]) expect(isPublicRoute(m, p)).toBe(false);
  });
});

describe('the web app routes', () => {
  it('are not proxied: the gateway serves the app page and files itself (libs/platform web-app.ts)', () => {
    const up = { ingest: 'http://i', query: 'http://q', exportWorker: 'http://e', audit: 'http://a', controlPlane: 'http://cp' };
    for (const p of ['/', '/login', '/o/ws/projects', '/o/ws/projects/p/s/r/r', '/o/ws/datasets/d', '/assets/index-abc.js']) {
      expect(routeFor('GET', p, up)).toBeNull();
    }
  });
});
