/** @type {import('jest').Config} */
const path = require('node:path');
const fs = require('node:fs');
const swcrc = JSON.parse(fs.readFileSync(path.join(__dirname, '.swcrc'), 'utf8'));
module.exports = {
  rootDir: __dirname,
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/tools'],
  testMatch: ['**/*.spec.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { ...swcrc, swcrc: false }],
    // parquetjs → thrift → uuid 13, which is ESM-only.
    '/node_modules/thrift/node_modules/uuid/.+\\.js$': ['@swc/jest', { ...swcrc, swcrc: false, jsc: { ...swcrc.jsc, parser: { syntax: 'ecmascript' } } }],
    '/node_modules/jose/.+\\.js$': ['@swc/jest', { ...swcrc, swcrc: false, jsc: { ...swcrc.jsc, parser: { syntax: 'ecmascript' } } }],
    // @langchain/langgraph-sdk's CommonJS build requires ESM-only p-retry and p-queue (agent-server tests drive the published client).
    '/node_modules/(p-retry|is-network-error|p-queue|p-timeout)/.+\\.js$': ['@swc/jest', { ...swcrc, swcrc: false, jsc: { ...swcrc.jsc, parser: { syntax: 'ecmascript' } } }],
    // The OTLP exporters' CommonJS build loads http/https with import(), which jest's module runtime refuses.
    '/node_modules/@opentelemetry/otlp-exporter-base/.+\\.js$': ['@swc/jest', { ...swcrc, swcrc: false, jsc: { ...swcrc.jsc, parser: { syntax: 'ecmascript' } }, module: { type: 'commonjs', ignoreDynamic: false } }],
  },
  // jose (session bearer tokens) is ESM-only: compiled to CommonJS for the tests like our own sources.
  transformIgnorePatterns: ['^(?!.*/node_modules/(thrift/node_modules/uuid/|jose/|@opentelemetry/otlp-exporter-base/|p-retry/|is-network-error/|p-queue/|p-timeout/)).*/node_modules/'],
  moduleNameMapper: { '^@th/(.*)$': '<rootDir>/libs/$1/src/index.ts' },
  testTimeout: 120000,
  // Three on a 2-core machine: the suites often wait on servers and the network, and a third worker keeps both CPUs
  // busy (measured in bench/RESULTS.md).
  maxWorkers: 3,
  testSequencer: '<rootDir>/tools/jest/sequencer.js',
  reporters: ['default', '<rootDir>/tools/jest/durations-reporter.js'],
  forceExit: false,
};
