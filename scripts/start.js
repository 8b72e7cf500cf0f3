#!/usr/bin/env node
// npm start: installs what is missing, builds, and runs the standalone service in this terminal.
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');
const { ensureDeps, build, root } = require('./ensure-deps');

ensureDeps();
build();
const child = spawn(process.execPath, [...require('./node-flags'), path.join(root, 'scripts', 'run.js'), 'standalone', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
