// With JEST_RECORD_DURATIONS=1, records the duration (seconds) of every suite of this run in durations.json, which
// the sequencer reads on a fresh checkout; suites that no longer exist are dropped. Record on a quiet machine.
'use strict';
const path = require('node:path');
const fs = require('node:fs');

class DurationsReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
    this.durations = {};
  }
  onTestResult(test, result) {
    const { start, end } = result.perfStats;
    if (!start || !end) return;
    const rel = path.relative(this.rootDir, test.path).split(path.sep).join('/');
    this.durations[rel] = Math.round((end - start) / 100) / 10;
  }
  onRunComplete() {
    if (process.env.JEST_RECORD_DURATIONS !== '1') return;
    const file = path.join(__dirname, 'durations.json');
    const before = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
    const merged = { ...before, ...this.durations };
    const kept = Object.entries(merged).filter(([rel]) => fs.existsSync(path.join(this.rootDir, rel)));
    const sorted = Object.fromEntries(kept.sort(([a], [b]) => a.localeCompare(b)));
    fs.writeFileSync(file, JSON.stringify(sorted, null, 2) + '\n');
  }
}

module.exports = DurationsReporter;
