// docdex's reporter for vitest 3, next to vitest's default one (which docdex reads for counts
// and failures): a `# docdex:start` / `# docdex:end` line as each test file and each test begins
// and ends, so a run killed at its timeout names the test it was in. The default reporter
// prints a file's tests only once the file ends.
function say(what, fields) {
  try {
    process.stdout.write(`# docdex:${what} ${JSON.stringify(fields)}\n`);
  } catch (_) {
    // Naming a test must never break the run.
  }
}

export default class DocdexReporter {
  onTestModuleStart(module) {
    say('start', { name: null, file: module.moduleId });
  }
  onTestModuleEnd(module) {
    say('end', { name: null, file: module.moduleId });
  }
  onTestCaseReady(test) {
    say('start', { name: test.fullName, file: test.module.moduleId, line: test.location?.line ?? null });
  }
  onTestCaseResult(test) {
    say('end', { name: test.fullName, file: test.module.moduleId });
  }
}
