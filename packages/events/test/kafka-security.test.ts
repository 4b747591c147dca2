// Kafka over TLS and SASL as a process configures it (KAFKA_SSL*, KAFKA_SASL_*, KAFKA_ENSURE_TOPICS): what the
// parser refuses and how, and how a start against the secure broker of infra/kafka succeeds or fails.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, parseConfig, redactConfig } from '@fin/config';
import { type SecureTestKafka, secureTestKafka, uniqueName } from '@fin/testing';
import { KafkaStartError, type KafkaConfig, connectKafkaBus, eventCatalog, kafkaConfigShape } from '../src';
import { kafkaFor, testLogger } from './helpers';

const shape = kafkaConfigShape('security-test');
const parse = (env: Record<string, string>): KafkaConfig => parseConfig(shape, { KAFKA_BROKERS: '127.0.0.1:1', ...env });

/** The problems parseConfig reports, as `VARIABLE: message` lines. */
function refused(env: Record<string, string>): string[] {
  try {
    parse(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.issues.map(({ variable, message }) => `${variable}: ${message}`);
    throw error;
  }
  throw new Error('the config parsed');
}

let secure: SecureTestKafka;
beforeAll(async () => {
  secure = await secureTestKafka();
}, 120_000);

describe('Kafka security configuration', () => {
  const file = (name: string) => path.join(secure.clientDir, name);

  it('is plaintext, without SASL, and creates topics by default', () => {
    expect(parse({})).toMatchObject({ KAFKA_SSL: false, KAFKA_SSL_REJECT_UNAUTHORIZED: true, KAFKA_ENSURE_TOPICS: true });
    expect(parse({}).KAFKA_SASL_MECHANISM).toBeUndefined();
  });

  it('parses mutual TLS and SASL, the mechanism in any case or as KEDA spells it, and never logs the password', () => {
    const config = parse({
      ...secure.sslEnv,
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      KAFKA_SASL_USERNAME: 'svc',
      KAFKA_SASL_PASSWORD: 'pw-0123456789',
    });
    expect(config).toMatchObject({
      KAFKA_SSL: true,
      KAFKA_SSL_CA_FILE: file('ca.pem'),
      KAFKA_SSL_CERT_FILE: file('client-cert.pem'),
      KAFKA_SSL_KEY_FILE: file('client-key.pem'),
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'svc',
    });
    // KEDA's spelling, from a Secret both read.
    expect(parse({ ...secure.saslEnv('scram-sha-256'), KAFKA_SASL_MECHANISM: 'scram_sha256' }).KAFKA_SASL_MECHANISM).toBe('scram-sha-256');
    expect(parse({ ...secure.saslEnv('plain'), KAFKA_SASL_MECHANISM: 'plaintext' }).KAFKA_SASL_MECHANISM).toBe('plain');
    const logged = JSON.stringify(redactConfig(shape, config));
    expect(logged).toContain('"KAFKA_SASL_PASSWORD":"[redacted]"');
    expect(logged).not.toContain('pw-0123456789');
  });

  it('names the variable of a missing, unreadable or wrong file', () => {
    const notPem = path.join(tmpdir(), `${uniqueName('not-pem')}.pem`);
    writeFileSync(notPem, 'hello');
    expect(refused({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: '/nonexistent/ca.pem' })).toEqual([
      'KAFKA_SSL_CA_FILE: cannot read /nonexistent/ca.pem (ENOENT)',
    ]);
    expect(refused({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: notPem })).toEqual([
      `KAFKA_SSL_CA_FILE: ${notPem} does not hold a PEM certificate`,
    ]);
    expect(refused({ ...secure.sslEnv, KAFKA_SSL_KEY_FILE: file('ca.pem') })).toEqual([
      `KAFKA_SSL_KEY_FILE: ${file('ca.pem')} does not hold an unencrypted PEM private key`,
    ]);
  });

  it('refuses settings that do not go together, naming the variable to change', () => {
    expect(refused({ KAFKA_SSL_CA_FILE: file('ca.pem') })).toEqual([
      'KAFKA_SSL_CA_FILE: is set but KAFKA_SSL is not true: set KAFKA_SSL=true to connect over TLS',
    ]);
    expect(refused({ KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: file('client-cert.pem') })).toEqual([
      'KAFKA_SSL_KEY_FILE: is required with KAFKA_SSL_CERT_FILE (mutual TLS needs the certificate and its key)',
    ]);
    expect(refused({ ...secure.sslEnv, KAFKA_SSL_CERT_FILE: file('ca.pem') })).toEqual([
      'KAFKA_SSL_KEY_FILE: is not the private key of the certificate in KAFKA_SSL_CERT_FILE',
    ]);
    expect(refused({ KAFKA_SASL_MECHANISM: 'scram-sha-256' })).toEqual([
      'KAFKA_SASL_USERNAME: is required with KAFKA_SASL_MECHANISM=scram-sha-256',
      'KAFKA_SASL_PASSWORD: is required with KAFKA_SASL_MECHANISM=scram-sha-256',
    ]);
    expect(refused({ KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: 'pw-0123456789' })).toEqual([
      'KAFKA_SASL_USERNAME: is set but KAFKA_SASL_MECHANISM is not (one of plain, scram-sha-256, scram-sha-512)',
      'KAFKA_SASL_PASSWORD: is set but KAFKA_SASL_MECHANISM is not (one of plain, scram-sha-256, scram-sha-512)',
    ]);
    expect(refused({ KAFKA_SASL_MECHANISM: 'gssapi', KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: 'pw-0123456789' })).toEqual([
      'KAFKA_SASL_MECHANISM: expected one of plain, scram-sha-256, scram-sha-512',
    ]);
    expect(refused({ KAFKA_SSL: 'maybe', KAFKA_ENSURE_TOPICS: 'later' })).toEqual([
      'KAFKA_SSL: expected true or false, got "maybe"',
      'KAFKA_ENSURE_TOPICS: expected true or false, got "later"',
    ]);
  });
});

describe('starting against the secure broker', () => {
  /** What connectKafkaBus rejects with for the environment `env` (a unique topic prefix of its own). */
  async function startFailure(env: Record<string, string>): Promise<KafkaStartError> {
    const attempt = connectKafkaBus(parse({ KAFKA_TOPIC_PREFIX: `${uniqueName('sec')}.`, ...env }), testLogger());
    const error: unknown = await attempt.then(
      async (bus) => {
        await bus.close();
        throw new Error('the start succeeded');
      },
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(KafkaStartError);
    return error as KafkaStartError;
  }

  it.each(['plain', 'scram-sha-256', 'scram-sha-512'] as const)(
    'logs in with SASL %s over TLS and creates the topics',
    async (mechanism) => {
      const prefix = `${uniqueName('sec')}.`;
      const bus = await connectKafkaBus(parse({ ...secure.saslEnv(mechanism), KAFKA_TOPIC_PREFIX: prefix }), testLogger());
      await bus.close();
      const admin = kafkaFor(secure.sslEnv).admin();
      await admin.connect();
      try {
        const created = (await admin.listTopics()).filter((topic) => topic.startsWith(prefix));
        expect(created).toHaveLength(Object.keys(eventCatalog).length * 2);
        await admin.deleteTopics({ topics: created });
      } finally {
        await admin.disconnect();
      }
    },
  );

  it('fails on a wrong password with one error naming the mechanism, user and broker, never the password', async () => {
    const env: Record<string, string> = { ...secure.saslEnv('scram-sha-512'), KAFKA_SASL_PASSWORD: 'not-the-password-42' };
    const error = await startFailure(env);
    expect(error.message).toBe(
      `Kafka refused the SASL scram-sha-512 login of user "fin-scram-512" at ${env.KAFKA_BROKERS}: ` +
        'Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512. ' +
        'Check KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD and KAFKA_SASL_MECHANISM.',
    );
    expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain('not-the-password-42');
  });

  it('fails when the broker certificate is not trusted, or a client certificate is required and missing', async () => {
    const { KAFKA_SSL_CA_FILE: _ca, ...withoutCa } = secure.saslEnv('scram-sha-512');
    const { KAFKA_SSL_CERT_FILE: _cert, KAFKA_SSL_KEY_FILE: _key, ...withoutClientCertificate } = secure.sslEnv;
    const [untrusted, anonymous] = await Promise.all([startFailure(withoutCa), startFailure(withoutClientCertificate)]);
    expect(untrusted.message).toMatch(
      new RegExp(
        `^TLS to Kafka failed at ${withoutCa.KAFKA_BROKERS}: self-signed certificate in certificate chain\\. Check KAFKA_SSL_CA_FILE`,
      ),
    );
    expect(anonymous.message).toMatch(
      new RegExp(`^TLS to Kafka failed at ${withoutClientCertificate.KAFKA_BROKERS}: the broker sent the TLS alert "bad certificate"\\.`),
    );
  });

  it('with KAFKA_ENSURE_TOPICS=false, creates nothing and refuses to start naming the missing topics', async () => {
    const prefix = `${uniqueName('managed')}.`;
    const error = await startFailure({ ...secure.sslEnv, KAFKA_TOPIC_PREFIX: prefix, KAFKA_ENSURE_TOPICS: 'false' });
    const expected = Object.values(eventCatalog)
      .flatMap((topic) => [prefix + topic.name, `${prefix + topic.name}.dlq`])
      .sort();
    expect(error.message).toBe(
      `KAFKA_ENSURE_TOPICS is false and these topics do not exist: ${expected.join(', ')}. Create them (e.g. as Strimzi KafkaTopics) or set KAFKA_ENSURE_TOPICS=true.`,
    );
    const admin = kafkaFor(secure.sslEnv).admin();
    await admin.connect();
    try {
      expect((await admin.listTopics()).filter((topic) => topic.startsWith(prefix))).toEqual([]);
      // Once they exist (made by someone else), the start goes ahead.
      await admin.createTopics({ waitForLeaders: true, topics: expected.map((topic) => ({ topic, numPartitions: 1 })) });
      const bus = await connectKafkaBus(
        parse({ ...secure.sslEnv, KAFKA_TOPIC_PREFIX: prefix, KAFKA_ENSURE_TOPICS: 'false' }),
        testLogger(),
      );
      await bus.close();
      await admin.deleteTopics({ topics: expected });
    } finally {
      await admin.disconnect();
    }
  });
});
