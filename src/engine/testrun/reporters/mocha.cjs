// docdex's reporter for mocha: TAP 13 as mocha's own `--reporter tap --reporter-option
// tapVersion=13` prints it (the counts and failures docdex reads), and a `# docdex:start` /
// `# docdex:end` line as each test or hook begins and ends, so a run killed at its timeout names
// the test it was in: TAP prints a test only once it ends. Written on mocha's runner events
// alone, not on mocha's TAP class, so it serves mocha 11 (CommonJS) and 12 (ES modules) alike.
'use strict';

function out(line) {
  process.stdout.write(`${line}\n`);
}

function title(runnable) {
  return runnable.fullTitle().replace(/#/g, '');
}

// `nesting` 1 for a hook: a `beforeEach` hook runs inside the test it is for.
function say(what, runnable, nesting) {
  try {
    const fields = { name: title(runnable), file: runnable.file || null, nesting };
    out(`# docdex:${what} ${JSON.stringify(fields)}`);
  } catch (_) {
    // Naming a test must never break the run.
  }
}

// A YAML block scalar's lines, indented under its key.
function block(key, text) {
  out(`    ${key}: |-`);
  out(String(text).replace(/^/gm, '      '));
}

function DocdexTap(runner) {
  let n = 1;
  let passes = 0;
  let failures = 0;
  let pending = 0;
  runner.once('start', () => out('TAP version 13'));
  runner.on('test', (t) => say('start', t, 0));
  runner.on('hook', (h) => say('start', h, 1));
  runner.on('hook end', (h) => say('end', h, 1));
  runner.on('pending', (t) => {
    pending += 1;
    out(`ok ${n} ${title(t)} # SKIP -`);
  });
  runner.on('pass', (t) => {
    passes += 1;
    out(`ok ${n} ${title(t)}`);
  });
  runner.on('fail', (t, err) => {
    failures += 1;
    out(`not ok ${n} ${title(t)}`);
    const e = err || {};
    if (e.message != null || e.stack != null) {
      out('  ---');
      if (e.message) {
        block('message', e.message);
      }
      if (e.stack) {
        block('stack', e.stack);
      }
      out('  ...');
    }
  });
  runner.on('test end', (t) => {
    n += 1;
    say('end', t, 0);
  });
  runner.once('end', () => {
    out(`# tests ${passes + failures}`);
    out(`# pass ${passes}`);
    out(`# fail ${failures}`);
    out(`1..${passes + failures + pending}`);
  });
}

module.exports = DocdexTap;
