// Orders the suites longest first, so the workers finish together instead of one starting a long suite at the
// end. Durations come from jest's own cache when this checkout has run the suite before, otherwise from
// durations.json (recorded from a full run by durations-reporter.js); a suite in neither is taken as long.
// The suites on a worker's shared cluster (useSharedCluster) come last, longest first among themselves: the
// cluster starts with the first of them and is stopped only when the worker exits, and idle it still costs
// CPU (its consumers poll Kafka), so it should not idle through the rest of the run.
'use strict';
const Sequencer = require('@jest/test-sequencer').default;
const path = require('node:path');
const fs = require('node:fs');

const RECORDED = path.join(__dirname, 'durations.json');
const UNKNOWN_S = 60;

class DurationSequencer extends Sequencer {
  sort(tests) {
    const recorded = fs.existsSync(RECORDED) ? JSON.parse(fs.readFileSync(RECORDED, 'utf8')) : {};
    const seconds = (test) => {
      const cached = this._getCache(test)[test.path];
      if (cached && typeof cached[1] === 'number' && cached[1] > 0) return cached[1] / 1000;
      const rel = path.relative(test.context.config.rootDir, test.path).split(path.sep).join('/');
      return recorded[rel] ?? UNKNOWN_S;
    };
    const shared = (test) => fs.readFileSync(test.path, 'utf8').includes('useSharedCluster(');
    const keyed = tests.map((t) => ({ t, s: seconds(t), last: shared(t) }));
    keyed.sort((a, b) => Number(a.last) - Number(b.last) || b.s - a.s || a.t.path.localeCompare(b.t.path));
    return keyed.map((k) => k.t);
  }
}

module.exports = DurationSequencer;
