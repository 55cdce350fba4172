// docdex's reporter for jest, next to jest's default one (which docdex reads for counts and
// failures): a `# docdex:start` / `# docdex:end` line as each test file and each test begins and
// ends, so a run killed at its timeout names the test it was in. The default reporter prints a
// file's tests only once the file ends.
'use strict';

function say(what, fields) {
  try {
    process.stdout.write(`# docdex:${what} ${JSON.stringify(fields)}\n`);
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
