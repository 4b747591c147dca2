// Preloaded into a service (NODE_OPTIONS=--require <this file>) by the chat-stream benchmark: on SIGUSR2 it runs a
// full garbage collection and appends the process's memory usage as one JSON line to BENCH_MEMORY_FILE, so that
// memory held by open streams can be told apart from garbage not collected yet. With BENCH_HEAP_SNAPSHOT set to a
// folder, each signal also writes a heap snapshot there (to find out what the memory is).
'use strict';
const inspector = require('node:inspector');
const { appendFileSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const file = process.env.BENCH_MEMORY_FILE;
if (file) {
  const session = new inspector.Session();
  session.connect();
  let snapshots = 0;
  process.on('SIGUSR2', () => {
    session.post('HeapProfiler.collectGarbage', () => {
      const usage = process.memoryUsage();
      if (process.env.BENCH_HEAP_SNAPSHOT) {
        const chunks = [];
        const collect = (message) => chunks.push(message.params.chunk);
        session.on('HeapProfiler.addHeapSnapshotChunk', collect);
        session.post('HeapProfiler.takeHeapSnapshot', null, () => {
          session.off('HeapProfiler.addHeapSnapshotChunk', collect);
          writeFileSync(
            path.join(process.env.BENCH_HEAP_SNAPSHOT, `${path.basename(file, '.jsonl')}-${++snapshots}.heapsnapshot`),
            chunks.join(''),
          );
          appendFileSync(file, `${JSON.stringify(usage)}\n`);
        });
        return;
      }
      appendFileSync(file, `${JSON.stringify(usage)}\n`);
    });
  });
}
