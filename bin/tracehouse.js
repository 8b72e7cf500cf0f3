#!/usr/bin/env node
// The `tracehouse` command (package.json "bin"): runs the compiled CLI, building the repository first when it was
// never built. Build output goes to stderr so stdout stays the command's own (JSON lines in pipelines).
'use strict';
const { execSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
if (!fs.existsSync(path.join(root, 'dist', 'apps', 'cli', 'src', 'main.js'))) {
  process.stderr.write('tracehouse: building the repository first (npm run build)...\n');
  execSync('npm run --silent build', { cwd: root, stdio: ['ignore', process.stderr, process.stderr] });
}
process.argv.splice(2, 0, 'cli');
require(path.join(root, 'scripts', 'run.js'));
