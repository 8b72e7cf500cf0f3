// Node/V8 flags every service process starts with (npm start, the test and benchmark launcher; the
// Dockerfile sets the same in NODE_OPTIONS). A semi-space of up to 128 MiB: ingest keeps each
// request's parsed runs alive until its batch is written, so every scavenge copies what is in flight;
// with the default 16 MiB young generation most of it was copied several times and promoted. Under
// bench/ingest V8 grows the semi-space to the maximum, and a scavenge came every ~130 ms at 64 MiB
// (2.2 s of pauses in three 100,000-run rounds) against every ~250 ms at 128 MiB (1.7 s). A process
// that allocates little (audit, export) keeps a small young generation: the size is a maximum.
'use strict';
module.exports = ['--max-semi-space-size=128'];
