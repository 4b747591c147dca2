import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { bool, crossChecked, csv, int, secret } from '@fin/config';
import type { Logger } from '@fin/log';
import { Kafka, type KafkaConfig as KafkaClientConfig, type SASLOptions, logLevel } from 'kafkajs';
import { z } from 'zod';
import type { EventBus } from './bus';
import { eventCatalog } from './catalog';
import { createKafka, createKafkaBus, ensureTopics } from './kafka-bus';
import { deadLetterTopicName } from './topic';

const SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;

/** The same mechanisms as KEDA's Kafka scaler names them (its TriggerAuthentication parameter `sasl`). */
const KEDA_SASL_SPELLINGS: Readonly<Record<string, string>> = {
  plaintext: 'plain',
  scram_sha256: 'scram-sha-256',
  scram_sha512: 'scram-sha-512',
};

/** The Kafka part of a process's environment; `clientId` names the process in the broker's logs. */
export function kafkaConfigShape(clientId: string) {
  return {
    KAFKA_BROKERS: csv().pipe(z.array(z.string()).min(1, 'expected at least one host:port')),
    KAFKA_CLIENT_ID: z.string().default(clientId),
    /** Prepended to topic and consumer-group names, so environments (or test runs) can share a cluster. */
    KAFKA_TOPIC_PREFIX: z
      .string()
      .regex(/^[a-zA-Z0-9._-]*$/, 'may contain only letters, digits, ".", "_" and "-"')
      .default(''),
    /** A consumer that stops heartbeating this long loses its partitions to the rest of its group. */
    KAFKA_SESSION_TIMEOUT_MS: int(6_000, 300_000).default(10_000),
    /** TLS to the brokers (managed Kafka, Strimzi's tls listener). The rules between the variables: kafkaSecurityProblems. */
    KAFKA_SSL: crossChecked(bool().default(false), kafkaSecurityProblems),
    /** The CA (PEM, one or more certificates) that signed the brokers' certificates; unset: the system's CAs. */
    KAFKA_SSL_CA_FILE: pemFile('certificate').optional(),
    /** Mutual TLS: the client's certificate (PEM) and its unencrypted private key (PEM), both or neither. */
    KAFKA_SSL_CERT_FILE: pemFile('certificate').optional(),
    KAFKA_SSL_KEY_FILE: pemFile('private key').optional(),
    /** false accepts any broker certificate: for a first test of a cluster only, never in production. */
    KAFKA_SSL_REJECT_UNAUTHORIZED: bool().default(true),
    /** KEDA's spellings (plaintext, scram_sha256, scram_sha512) are taken too, so one Secret can serve both. */
    KAFKA_SASL_MECHANISM: z
      .string()
      .transform((raw) => KEDA_SASL_SPELLINGS[raw.trim().toLowerCase()] ?? raw.trim().toLowerCase())
      .pipe(z.enum(SASL_MECHANISMS, { error: `expected one of ${SASL_MECHANISMS.join(', ')}` }))
      .optional(),
    KAFKA_SASL_USERNAME: z.string().optional(),
    KAFKA_SASL_PASSWORD: secret(z.string()).optional(),
    /**
     * Whether the process creates the catalog's topics (and dead-letter topics) that are missing. false where
     * topics are managed (Strimzi KafkaTopics, a managed cluster's console): the process then only checks they
     * exist, and refuses to start naming those that do not.
     */
    KAFKA_ENSURE_TOPICS: bool().default(true),
  };
}

export type KafkaConfig = z.output<z.ZodObject<ReturnType<typeof kafkaConfigShape>>>;

/** A path to a readable PEM file holding a `kind`; the config keeps the path (read again when connecting). */
function pemFile(kind: 'certificate' | 'private key') {
  return z.string().transform((raw, ctx) => {
    const file = raw.trim();
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: `cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})` });
      return z.NEVER;
    }
    try {
      if (kind === 'certificate') new X509Certificate(text);
      else createPrivateKey(text);
    } catch {
      const hint = kind === 'private key' ? 'an unencrypted PEM private key' : 'a PEM certificate';
      ctx.addIssue({ code: 'custom', message: `${file} does not hold ${hint}` });
      return z.NEVER;
    }
    return file;
  });
}

/** The rules between the TLS and SASL variables, each problem naming the variable to change. */
function kafkaSecurityProblems(raw: Readonly<Record<string, unknown>>): { variable: string; message: string }[] {
  const config = raw as Partial<KafkaConfig>;
  const problems: { variable: string; message: string }[] = [];
  if (!config.KAFKA_SSL) {
    const tlsOnly = ['KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE'] as const;
    for (const variable of tlsOnly.filter((name) => config[name] !== undefined))
      problems.push({ variable, message: 'is set but KAFKA_SSL is not true: set KAFKA_SSL=true to connect over TLS' });
  }
  if ((config.KAFKA_SSL_CERT_FILE === undefined) !== (config.KAFKA_SSL_KEY_FILE === undefined)) {
    const [missing, given] =
      config.KAFKA_SSL_KEY_FILE === undefined
        ? ['KAFKA_SSL_KEY_FILE', 'KAFKA_SSL_CERT_FILE']
        : ['KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE'];
    problems.push({ variable: missing, message: `is required with ${given} (mutual TLS needs the certificate and its key)` });
  } else if (config.KAFKA_SSL_CERT_FILE !== undefined && config.KAFKA_SSL_KEY_FILE !== undefined) {
    const certificate = new X509Certificate(readFileSync(config.KAFKA_SSL_CERT_FILE, 'utf8'));
    if (!certificate.checkPrivateKey(createPrivateKey(readFileSync(config.KAFKA_SSL_KEY_FILE, 'utf8'))))
      problems.push({ variable: 'KAFKA_SSL_KEY_FILE', message: 'is not the private key of the certificate in KAFKA_SSL_CERT_FILE' });
  }
  const credentials = ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'] as const;
  if (config.KAFKA_SASL_MECHANISM === undefined) {
    for (const variable of credentials.filter((name) => config[name] !== undefined))
      problems.push({ variable, message: `is set but KAFKA_SASL_MECHANISM is not (one of ${SASL_MECHANISMS.join(', ')})` });
  } else {
    for (const variable of credentials.filter((name) => config[name] === undefined))
      problems.push({ variable, message: `is required with KAFKA_SASL_MECHANISM=${config.KAFKA_SASL_MECHANISM}` });
  }
  return problems;
}

/** The kafkajs client settings of the config: brokers, and TLS and SASL as configured (files read here). */
export function kafkaClientConfig(config: KafkaConfig): Pick<KafkaClientConfig, 'clientId' | 'brokers' | 'ssl' | 'sasl'> {
  const read = (file: string | undefined) => (file === undefined ? undefined : readFileSync(file, 'utf8'));
  const ca = read(config.KAFKA_SSL_CA_FILE);
  const ssl = config.KAFKA_SSL
    ? {
        rejectUnauthorized: config.KAFKA_SSL_REJECT_UNAUTHORIZED,
        ...(ca === undefined ? {} : { ca: [ca] }),
        ...(config.KAFKA_SSL_CERT_FILE === undefined
          ? {}
          : { cert: read(config.KAFKA_SSL_CERT_FILE), key: read(config.KAFKA_SSL_KEY_FILE) }),
      }
    : undefined;
  return {
    clientId: config.KAFKA_CLIENT_ID,
    brokers: config.KAFKA_BROKERS,
    ...(ssl === undefined ? {} : { ssl }),
    ...(saslOptions(config) ?? {}),
  };
}

function saslOptions({
  KAFKA_SASL_MECHANISM: mechanism,
  KAFKA_SASL_USERNAME: username = '',
  KAFKA_SASL_PASSWORD: password = '',
}: KafkaConfig): { sasl: SASLOptions } | undefined {
  switch (mechanism) {
    case undefined:
      return undefined;
    case 'plain':
      return { sasl: { mechanism, username, password } };
    case 'scram-sha-256':
      return { sasl: { mechanism, username, password } };
    case 'scram-sha-512':
      return { sasl: { mechanism, username, password } };
  }
}

/**
 * Connects to Kafka as configured and makes sure every topic of the catalog (and its dead-letter topic) exists:
 * creates the missing ones, or with KAFKA_ENSURE_TOPICS=false refuses to start naming them. A start that cannot
 * reach, authenticate to or verify the brokers fails with one KafkaStartError saying what, where and how.
 */
export async function connectKafkaBus(config: KafkaConfig, logger: Logger): Promise<EventBus> {
  const client = kafkaClientConfig(config);
  await prepareTopics(config, client);
  return createKafkaBus({
    kafka: createKafka({ logger, ...client }),
    logger,
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    sessionTimeoutMs: config.KAFKA_SESSION_TIMEOUT_MS,
    heartbeatIntervalMs: Math.floor(config.KAFKA_SESSION_TIMEOUT_MS / 5),
  });
}

/** Kafka could not be used at start-up; the message says what failed, at which broker, and what to check. */
export class KafkaStartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KafkaStartError';
  }
}

/**
 * The start-up's first contact with the cluster, on a client of its own: kafkajs logs each failed attempt, and
 * the start reports the failure once instead (KafkaStartError). Its log entries only tell which broker failed.
 */
async function prepareTopics(config: KafkaConfig, client: ReturnType<typeof kafkaClientConfig>): Promise<void> {
  let lastBroker: string | undefined;
  const kafka = new Kafka({
    ...client,
    logLevel: logLevel.ERROR,
    logCreator: () => (entry) => {
      const broker: unknown = (entry.log as { broker?: unknown }).broker;
      if (typeof broker === 'string') lastBroker = broker;
    },
  });
  try {
    if (config.KAFKA_ENSURE_TOPICS) {
      await ensureTopics(kafka, Object.values(eventCatalog), 3, { topicPrefix: config.KAFKA_TOPIC_PREFIX });
      return;
    }
    const missing = await missingTopics(kafka, config.KAFKA_TOPIC_PREFIX);
    if (missing.length > 0)
      throw new KafkaStartError(
        `KAFKA_ENSURE_TOPICS is false and these topics do not exist: ${missing.join(', ')}. Create them (e.g. as Strimzi KafkaTopics) or set KAFKA_ENSURE_TOPICS=true.`,
      );
  } catch (error) {
    if (error instanceof KafkaStartError) throw error;
    // The message carries the reason; no cause, which loggers would print after it a second time.
    throw new KafkaStartError(describeFailure(error, config, lastBroker));
  }
}

/** The catalog's topics and dead-letter topics (with the prefix) that the cluster does not have. */
async function missingTopics(kafka: Kafka, topicPrefix: string): Promise<string[]> {
  const names = Object.values(eventCatalog).flatMap((topic) => [topicPrefix + topic.name, topicPrefix + deadLetterTopicName(topic.name)]);
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    return [...new Set(names)].filter((name) => !existing.has(name)).sort();
  } finally {
    await admin.disconnect();
  }
}

/** One line for a failed start: what failed (login, TLS, reaching the brokers), where, and what to check. Never the password. */
function describeFailure(error: unknown, config: KafkaConfig, lastBroker: string | undefined): string {
  const chain: Error[] = [];
  for (let cause: unknown = error; cause instanceof Error && chain.length < 5; cause = cause.cause) chain.push(cause);
  const broker =
    chain.map((cause) => (cause as { broker?: unknown }).broker).find((value) => typeof value === 'string') ??
    lastBroker ??
    config.KAFKA_BROKERS.join(',');
  const root = chain.at(-1);
  const reason = root?.message.replace(/^Connection error: /, '') ?? String(error);
  if (chain.some((cause) => cause.name === 'KafkaJSSASLAuthenticationError')) {
    return `Kafka refused the SASL ${config.KAFKA_SASL_MECHANISM ?? ''} login of user "${config.KAFKA_SASL_USERNAME ?? ''}" at ${broker}: ${reason.replace(/^SASL [^:]*: /, '')}. Check KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD and KAFKA_SASL_MECHANISM.`;
  }
  const tls = /certificate|SSL|TLS|handshake|self[- ]signed|alert/i.test(reason);
  if (config.KAFKA_SSL && tls) {
    return `TLS to Kafka failed at ${broker}: ${firstLine(reason)}. Check KAFKA_SSL_CA_FILE (the CA that signed the broker's certificate) and, for mutual TLS, KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE.`;
  }
  const security = [config.KAFKA_SSL ? 'TLS' : 'plaintext', config.KAFKA_SASL_MECHANISM ? `SASL ${config.KAFKA_SASL_MECHANISM}` : undefined]
    .filter(Boolean)
    .join(' + ');
  return `Kafka is not usable at ${broker} (${security}): ${firstLine(reason)}. Check KAFKA_BROKERS, and that the listener expects ${security}.`;
}

/** OpenSSL's messages carry a source location after the reason; the reason is enough. */
function firstLine(message: string): string {
  const alert = /ssl\/tls alert ([a-z ]+)/i.exec(message);
  return alert ? `the broker sent the TLS alert "${alert[1] ?? ''}"` : (message.split('\n')[0] ?? message);
}
