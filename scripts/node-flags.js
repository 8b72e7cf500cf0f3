// Node/V8 flags every service process starts with (npm start, the test and benchmark launcher; the
// Dockerfile sets the same in NODE_OPTIONS). A 64 MiB semi-space: ingest keeps each request's parsed
// runs alive until its batch is written, and with the default 16 MiB young generation most of them
// were copied by several scavenges and promoted; with 64 MiB most die young (a third of the scavenges,
// about a third less scavenge time in bench/ingest).
'use strict';
module.exports = ['--max-semi-space-size=64'];
