// The job-status service as a process (src/main.ts, as a deployment runs it) given a wrong Kafka password: the
// start ends with one fatal line that says what failed, at which broker, with which mechanism and user, and exit 1,
// instead of retrying. Every service starts Kafka the same way (connectKafkaBus).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { secureTestKafka, testCustomerToolsKey } from '@fin/testing';

interface LogLine {
  level: string;
  msg: string;
  err?: { message?: string };
}

it('fails start-up on a wrong SASL password with one fatal line and exit code 1, never logging the password', async () => {
  const kafka = (await secureTestKafka()).saslEnv('scram-sha-512');
  const password = 'wrong-password-for-the-test-7';
  const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', path.join(__dirname, '../src/main.ts')], {
    cwd: path.join(__dirname, '..'),
    env: {
      PATH: process.env.PATH,
      ...kafka,
      KAFKA_SASL_PASSWORD: password,
      // Not connected to before Kafka: the pool connects on its first query.
      DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/postgres',
      INTERNAL_SIGNING_SECRET: 'kafka-start-test-signing-secret-0123456789',
      CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
      PORT: '0',
      METRICS_PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, 'close')) as [number | null];

  const lines = stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as LogLine);
  expect(code).toBe(1);
  expect(lines.filter((line) => line.level === 'error' || line.level === 'fatal')).toEqual([
    expect.objectContaining({
      level: 'fatal',
      msg: 'jobs could not start',
      err: expect.objectContaining({
        message: expect.stringMatching(
          new RegExp(
            `^Kafka refused the SASL scram-sha-512 login of user "fin-scram-512" at ${kafka.KAFKA_BROKERS}: .*invalid credentials`,
          ),
        ) as unknown,
      }) as unknown,
    }),
  ]);
  expect(lines.map((line) => line.msg)).not.toContain('ready');
  // The config is logged at the start, with the password redacted.
  expect(stdout).toContain('"KAFKA_SASL_PASSWORD":"[redacted]"');
  expect(stdout + stderr).not.toContain(password);
  expect(stderr).toBe('');
}, 120_000);
