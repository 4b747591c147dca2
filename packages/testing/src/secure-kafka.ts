// The secure test broker: infra/kafka/start.sh with KAFKA_SECURE=1, an SSL listener that requires a client
// certificate and a SASL_SSL listener with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 users, keys and passwords made
// at its start. Started on first use by whichever test file needs it (start.sh under flock: one start, the others
// reuse it); scripts/test.sh stops it after the run.
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { runCommand } from './processes';

const KAFKA_DIR = path.resolve(__dirname, '../../../infra/kafka');

/** Its plaintext port (inter-broker traffic); the controller is on +1, SSL on +2, SASL_SSL on +3. */
const SECURE_PORT = Number(process.env.KAFKA_SECURE_PORT ?? '19492');

export type SaslMechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512';

interface ClientFile {
  ssl: { brokers: string[] };
  sasl: { brokers: string[]; users: Record<SaslMechanism, { username: string; password: string }> };
}

export interface SecureTestKafka {
  /** A process's environment (the KAFKA_* variables) for mutual TLS: CA, client certificate and key. */
  sslEnv: Record<string, string>;
  /** A process's environment for SASL over TLS (the CA only) with the mechanism's user. */
  saslEnv(mechanism: SaslMechanism): Record<string, string>;
  /** Where the client's PEM files are (ca.pem, client-cert.pem, client-key.pem). */
  clientDir: string;
}

let started: Promise<SecureTestKafka> | undefined;

/** The secure broker's client settings, once it runs (started here if it does not). */
export function secureTestKafka(): Promise<SecureTestKafka> {
  started ??= start().catch((error: unknown) => {
    started = undefined;
    throw error;
  });
  return started;
}

async function start(): Promise<SecureTestKafka> {
  const env = {
    ...process.env,
    KAFKA_SECURE: '1',
    KAFKA_PORT: String(SECURE_PORT),
    KAFKA_CONTROLLER_PORT: String(SECURE_PORT + 1),
    KAFKA_SSL_PORT: String(SECURE_PORT + 2),
    KAFKA_SASL_PORT: String(SECURE_PORT + 3),
  };
  mkdirSync(path.join(KAFKA_DIR, '.run'), { recursive: true });
  // -o: the broker that start.sh leaves running must not inherit (and hold) the lock.
  const lock = path.join(KAFKA_DIR, '.run', `secure-${SECURE_PORT}.lock`);
  const run = await runCommand('flock', ['-o', lock, 'bash', path.join(KAFKA_DIR, 'start.sh')], { env });
  if (run.code !== 0) throw new Error(`infra/kafka/start.sh (KAFKA_SECURE=1) failed (${run.code}):\n${run.output}`);
  const clientDir = path.join(KAFKA_DIR, '.run', String(SECURE_PORT), 'client');
  const client = JSON.parse(readFileSync(path.join(clientDir, 'client.json'), 'utf8')) as ClientFile;
  const ca = path.join(clientDir, 'ca.pem');
  return {
    clientDir,
    sslEnv: {
      KAFKA_BROKERS: client.ssl.brokers.join(','),
      KAFKA_SSL: 'true',
      KAFKA_SSL_CA_FILE: ca,
      KAFKA_SSL_CERT_FILE: path.join(clientDir, 'client-cert.pem'),
      KAFKA_SSL_KEY_FILE: path.join(clientDir, 'client-key.pem'),
    },
    saslEnv: (mechanism) => ({
      KAFKA_BROKERS: client.sasl.brokers.join(','),
      KAFKA_SSL: 'true',
      KAFKA_SSL_CA_FILE: ca,
      KAFKA_SASL_MECHANISM: mechanism,
      KAFKA_SASL_USERNAME: client.sasl.users[mechanism].username,
      KAFKA_SASL_PASSWORD: client.sasl.users[mechanism].password,
    }),
  };
}
