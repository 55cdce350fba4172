// docdex's reporter for mocha: mocha's own TAP (its counts and failures are what docdex
// reads), and a `# docdex:start` / `# docdex:end` line as each test or hook begins and ends,
// so a run killed at its timeout names the test it was in: TAP prints a test only once it ends.
'use strict';
const path = require('path');

// mocha's TAP reporter, from the mocha running this one (it loads every built-in reporter).
function mochaTap() {
  const suffix = path.join('lib', 'reporters', 'tap.js');
  for (const m of Object.values(require.cache)) {
    if (m && typeof m.filename === 'string' && m.filename.endsWith(suffix) && typeof m.exports === 'function') {
      return m.exports;
    }
  }
  try {
    return require(require.resolve('mocha/lib/reporters/tap', { paths: [process.cwd()] }));
  } catch (_) {
    return null;
  }
}

// `nesting` 1 for a hook: a `beforeEach` hook runs inside the test it is for.
function say(what, runnable, nesting) {
  try {
    const name = runnable.fullTitle().replace(/#/g, '');
    const fields = { name, file: runnable.file || null, nesting };
    process.stdout.write(`# docdex:${what} ${JSON.stringify(fields)}\n`);
  } catch (_) {
    // Naming a test must never break the run.
  }
}

const Tap = mochaTap();

function DocdexTap(runner, options) {
  if (Tap) {
    Tap.call(this, runner, options);
  }
  runner.on('test', (t) => say('start', t, 0));
  runner.on('test end', (t) => say('end', t, 0));
  runner.on('hook', (h) => say('start', h, 1));
  runner.on('hook end', (h) => say('end', h, 1));
}
if (Tap) {
  Object.setPrototypeOf(DocdexTap.prototype, Tap.prototype);
}
module.exports = DocdexTap;
