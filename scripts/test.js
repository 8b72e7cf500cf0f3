#!/usr/bin/env node
// npm test: installs what is missing, builds (cluster tests run the compiled apps), type-checks,
// lints module boundaries, then runs every jest suite against the real servers the suites start, then the published
// Python SDK's own integration suites against the standalone service.
'use strict';
const { ensureDeps, ensureSandboxTools, ensureChromium, build, run } = require('./ensure-deps');
const fs = require('node:fs');
const path = require('node:path');

ensureDeps();
ensureSandboxTools();
ensureChromium();
build();
run('npx tsc -p tsconfig.base.json');
run('npx tsc -p apps/web/tsconfig.json');
if (fs.existsSync(path.join(__dirname, '..', 'eslint.config.mjs'))) run('npx eslint apps libs tools --max-warnings=0');
run(`npx jest --ci ${process.argv.slice(2).join(' ')}`.trim());
// The published Python SDK's own integration suites against the built standalone service (scripts/python-sdk.js).
run('node scripts/python-sdk.js');
