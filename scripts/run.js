#!/usr/bin/env node
// Runs a compiled app: node scripts/run.js <app> [args]. Resolves @th/<lib> to dist/libs/<lib>/src.
'use strict';
const path = require('node:path');
const Module = require('node:module');
const dist = path.resolve(__dirname, '..', 'dist');
const original = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  if (request.startsWith('@th/')) {
    request = path.join(dist, 'libs', request.slice(4), 'src', 'index.js');
  }
  return original.call(this, request, parent, ...rest);
};
const target = process.argv[2];
if (!target) {
  process.stderr.write('usage: node scripts/run.js <app|path-under-dist> [args]\n');
  process.exit(2);
}
process.argv.splice(2, 1);
const file = target.endsWith('.js') ? path.join(dist, target) : path.join(dist, 'apps', target, 'src', 'main.js');
require(file);
