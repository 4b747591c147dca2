// A Kafka broker of a test's own (infra/kafka/start.sh on free ports, data kept across restarts), for tests that
// stop and start the broker without disturbing other test files.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './system';

const SCRIPTS = path.resolve(__dirname, '../../infra/kafka');

export interface OwnBroker {
  brokers: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Stops the broker and deletes its data. */
  destroy(): Promise<void>;
}

export async function ownBroker(): Promise<OwnBroker> {
  const [port, controllerPort] = [await freePort(), await freePort()];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fin-e2e-kafka-'));
  const env = { ...process.env, KAFKA_PORT: String(port), KAFKA_CONTROLLER_PORT: String(controllerPort), KAFKA_DATA_DIR: dataDir };
  // Asynchronous, so the test process keeps serving its sockets while the broker starts or stops.
  const run = (script: string) =>
    new Promise<void>((resolve, reject) => {
      const child = spawn('bash', [path.join(SCRIPTS, script)], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${script} failed (${code}): ${stderr}`))));
    });
  return {
    brokers: `127.0.0.1:${port}`,
    start: () => run('start.sh'),
    stop: () => run('stop.sh'),
    async destroy() {
      await run('stop.sh');
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
