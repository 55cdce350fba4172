// docdex's reporter for jest, next to jest's default one (which docdex reads for counts and
// failures): a `# docdex:start` / `# docdex:end` line as each test file and each test begins and
// ends, so a run killed at its timeout names the test it was in. The default reporter prints a
// file's tests only once the file ends.
//
// The lines go straight to fd 1 with `fs.writeSync`, not through `process.stdout.write`: jest's
// default reporter (run on several files, not verbose) replaces `process.stdout.write` with a
// buffer it flushes on a 100 ms timer, and running in band (`--runInBand`) a test blocking the
// event loop (`while (true) {}`) never lets that timer fire, so its start line was never printed.
'use strict';

const fs = require('fs');

// Writes all of `text` to stdout now; a pipe left non-blocking may take part of it or refuse
// (EAGAIN) while docdex has not read it yet, so it is retried, a bounded number of times.
function writeNow(text) {
  let buf = Buffer.from(text);
  for (let tries = 0; buf.length > 0 && tries < 10000; tries += 1) {
    try {
      buf = buf.subarray(fs.writeSync(1, buf));
    } catch (e) {
      if (e.code !== 'EAGAIN') {
        return;
      }
    }
  }
}

function say(what, fields) {
  try {
    writeNow(`# docdex:${what} ${JSON.stringify(fields)}\n`);
  } catch (_) {
    // Naming a test must never break the run.
  }
}

const name = (info) => [...(info.ancestorTitles || []), info.title].join(' › ');

class DocdexReporter {
  onTestStart(test) {
    say('start', { name: null, file: test.path });
  }
  onTestResult(test) {
    say('end', { name: null, file: test.path });
  }
  onTestCaseStart(test, info) {
    say('start', { name: name(info), file: test.path });
  }
  onTestCaseResult(test, result) {
    say('end', { name: name(result), file: test.path });
  }
  getLastError() {
    return undefined;
  }
}
module.exports = DocdexReporter;
