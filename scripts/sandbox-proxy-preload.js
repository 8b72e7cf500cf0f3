// Loaded into every Node process of a deployment's sandbox (NODE_OPTIONS=--require, set by the control plane):
// Node's fetch ignores HTTP(S)_PROXY, and inside the sandbox the proxy is the only way out. It makes undici's
// EnvHttpProxyAgent (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) the global dispatcher, which Node's own fetch uses too.
// A convenience, not a boundary: the sandbox has no other route, and the proxy applies the outbound policy.
'use strict';
if (process.env.HTTPS_PROXY || process.env.HTTP_PROXY || process.env.https_proxy || process.env.http_proxy) {
  try {
    // Bound beside this file inside the sandbox; from the repository's node_modules outside it (tests).
    const undici = require(require('node:fs').existsSync(`${__dirname}/node_modules/undici`) ? `${__dirname}/node_modules/undici` : 'undici');
    undici.setGlobalDispatcher(new undici.EnvHttpProxyAgent());
  } catch (err) {
    process.stderr.write(`sandbox proxy preload: fetch will not use the proxy: ${err.message}\n`);
  }
}
