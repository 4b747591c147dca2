// Preloaded into a service (NODE_OPTIONS=--require <this file>) when a benchmark runs with --profile: records a
// V8 CPU profile from start to exit and writes it to BENCH_CPU_PROFILE, like `node --cpu-prof` (which is not
// allowed in NODE_OPTIONS). The services are started by the system tests' helper, which takes no node flags;
// the environment is the one way in. The profile's timestamps are the same monotonic microseconds as
// `node --cpu-prof` writes, so bench/src/lib/profile.ts can cut out a measurement's window.
'use strict';
const inspector = require('node:inspector');
const { writeFileSync } = require('node:fs');

const file = process.env.BENCH_CPU_PROFILE;
if (file) {
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  // The in-process inspector session answers synchronously, so this works in the synchronous 'exit' handler.
  process.once('exit', () => {
    session.post('Profiler.stop', (error, result) => {
      if (!error && result) writeFileSync(file, JSON.stringify(result.profile));
    });
  });
}
