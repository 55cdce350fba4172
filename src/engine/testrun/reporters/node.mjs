// docdex's second reporter for node's test runner (next to TAP, which docdex reads for counts
// and failures): a `# docdex:start` line when a test is dequeued to run and `# docdex:end`
// when it completes, so a run killed at its timeout names the test it was in. TAP prints a
// test only once it ends.
export default async function* docdex(source) {
  for await (const event of source) {
    // A node without `test:complete` (before 20.15) ends a test with its `test:pass` or
    // `test:fail`, reported in order; with it, those come after and find the test ended.
    const ends = event.type === 'test:complete' || event.type === 'test:pass' || event.type === 'test:fail';
    const what = event.type === 'test:dequeue' ? 'start' : ends ? 'end' : null;
    const d = event.data;
    if (!what || !d) {
      continue;
    }
    yield `# docdex:${what} ${JSON.stringify({ name: d.name, file: d.file ?? null, line: d.line ?? null, nesting: d.nesting ?? 0 })}\n`;
  }
}
