import { UsageError } from './errors';

/** Where the CLI talks to, with which key. */
export interface Connection {
  /** The service's root (the tracing API's `/api/v1/...` paths are appended to it). */
  endpoint: string;
  /** The control plane's root (`/v2/deployments`...): the endpoint itself unless set apart. */
  controlPlaneUrl: string;
  apiKey: string;
}

export interface ConnectionFlags {
  endpoint?: string;
  'api-key'?: string;
  'control-plane-url'?: string;
}

/** What `npm start` serves on. */
export const DEFAULT_ENDPOINT = 'http://127.0.0.1:1984';

/**
 * The SDKs' variables (LANGSMITH_* before LANGCHAIN_*), flags first. The SDKs accept the root, `/api` or `/api/v1`
 * as the endpoint; the route table's paths carry their own prefix, so the root is kept.
 */
export function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv): Connection {
  // An empty variable counts as unset (CI systems often define a missing secret as '').
  const endpoint = root(flags.endpoint || env.LANGSMITH_ENDPOINT || env.LANGCHAIN_ENDPOINT || DEFAULT_ENDPOINT, 'endpoint');
  const apiKey = flags['api-key'] || env.LANGSMITH_API_KEY || env.LANGCHAIN_API_KEY;
  if (!apiKey) throw new UsageError('no API key: set LANGSMITH_API_KEY (or LANGCHAIN_API_KEY) or pass --api-key');
  const cp = flags['control-plane-url'] || env.TRACEHOUSE_CONTROL_PLANE_URL;
  return { endpoint, apiKey, controlPlaneUrl: cp ? root(cp, 'control plane URL', /\/v2$/) : endpoint };
}

function root(value: string, what: string, suffix = /\/api(?:\/v1)?$/): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`the ${what} is not a URL: ${value}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`the ${what} must be http(s): ${value}`);
  return `${url.origin}${url.pathname.replace(/\/+$/, '').replace(suffix, '')}`;
}
