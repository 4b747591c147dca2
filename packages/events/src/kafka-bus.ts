import { type Logger } from '@fin/log';
import { clearNotLive, reportNotLive } from '@fin/metrics';
import {
  type Admin,
  type Consumer,
  type IHeaders,
  Kafka,
  KafkaJSError,
  type KafkaConfig,
  type KafkaMessage,
  type LogEntry,
  Partitioners,
  logLevel,
  type Message,
  type Producer,
} from 'kafkajs';
import { backoffDelay, sleep } from './backoff';
import { encodeEnvelope, type ConsumerOptions, type EventBus, type Subscription } from './bus';
import {
  DEFAULT_CONCURRENCY,
  deadLetterProcessor,
  envelopeProcessor,
  processorContext,
  type RawMessage,
  type RawOutgoingMessage,
  type RawProcessor,
  selectedTopics,
} from './delivery';
import { type AnyTopic, deadLetterTopicName } from './topic';
import { sendTraced } from './tracing';

export interface KafkaBusOptions {
  kafka: Kafka;
  logger: Logger;
  /** A consumer that misses heartbeats this long loses its partitions to the rest of its group (default 30 s). */
  sessionTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  /** Where a group without committed offsets starts: the earliest retained message (default), or new ones only. */
  fromBeginning?: boolean;
  /** Longest a fetch waits for new messages; also bounds how long stopping a consumer takes (default 1 s). */
  maxWaitTimeMs?: number;
  /**
   * Prepended to every topic and consumer-group name on the wire (e.g. `staging.`), so several environments or
   * test runs can share a cluster. Handlers and publishers keep using the catalog's names.
   */
  topicPrefix?: string;
}

/**
 * The event bus on Kafka. The producer is idempotent with one request in flight, so retries neither duplicate
 * nor reorder messages of a partition; after a send that failed it is replaced (see send). Consumers commit a message's offset only after it is handled or
 * dead-lettered, so a consumer that dies mid-handler has the message redelivered to its group.
 */
export function createKafkaBus({
  kafka,
  logger,
  sessionTimeoutMs = 30_000,
  heartbeatIntervalMs = 3_000,
  fromBeginning = true,
  maxWaitTimeMs = 1_000,
  topicPrefix = '',
}: KafkaBusOptions): EventBus {
  const log = logger.child({ component: 'kafka-bus' });
  interface ProducerEntry {
    producer: Producer;
    connection: Promise<void> | undefined;
    /** Sends using this producer that have not settled yet. */
    sending: number;
    disconnected?: Promise<void>;
  }
  const newProducer = (): ProducerEntry => ({
    producer: kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
    }),
    connection: undefined,
    sending: 0,
  });
  let current = newProducer();
  /** Producers replaced after a failed send, each disconnected once its last send has settled (or on close). */
  const retired = new Set<ProducerEntry>();
  const subscriptions = new Set<Subscription>();
  let closing: Promise<void> | undefined;

  function connectProducer(entry: ProducerEntry): Promise<void> {
    entry.connection ??= entry.producer.connect().catch((error: unknown) => {
      entry.connection = undefined;
      throw error;
    });
    return entry.connection;
  }

  /** Disconnects a retired producer, once (close waits for a disconnection already under way). */
  function disconnect(entry: ProducerEntry): Promise<void> {
    entry.disconnected ??= entry.producer
      .disconnect()
      .catch((error: unknown) => log.debug({ err: error }, 'Disconnecting a retired producer failed'))
      .finally(() => retired.delete(entry));
    return entry.disconnected;
  }

  async function send(messages: readonly RawOutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const entry = current;
    entry.sending += 1;
    try {
      await connectProducer(entry);
      const byTopic = new Map<string, Message[]>();
      for (const { topic, key, value, headers } of messages) {
        let batch = byTopic.get(topic);
        if (!batch) byTopic.set(topic, (batch = []));
        batch.push({ key, value, headers: { ...headers } });
      }
      await entry.producer.sendBatch({
        acks: -1,
        topicMessages: [...byTopic].map(([topic, batch]) => ({ topic: topicPrefix + topic, messages: batch })),
      });
    } catch (error) {
      // After a send that failed, nobody knows whether the broker wrote the batch: kafkajs rolls its sequence
      // numbers back all the same, so this producer's next batch would reuse them and be refused for good
      // (OUT_OF_ORDER_SEQUENCE_NUMBER) or dropped as a duplicate. It is retired, and the next send gets a new
      // producer id: what is sent again may then be written twice (delivery is at least once, as consumers
      // expect), never lost or stuck.
      if (current === entry && entry.connection) {
        current = newProducer();
        retired.add(entry);
      }
      throw error;
    } finally {
      entry.sending -= 1;
      if (retired.has(entry) && entry.sending === 0) void disconnect(entry);
    }
  }

  /** Where each partition of `topics` ends now: the offset its next message will get. */
  async function endOffsets(topics: string[]): Promise<{ topic: string; partition: number; offset: string }[]> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      // A partition between leaders (a topic just created, a broker restarting) answers with a retriable error.
      for (let failures = 1; ; failures++) {
        try {
          const perTopic = await Promise.all(
            topics.map(async (topic) =>
              (await admin.fetchTopicOffsets(topic)).map(({ partition, high }) => ({ topic, partition, offset: high })),
            ),
          );
          return perTopic.flat();
        } catch (error) {
          if (!(error instanceof KafkaJSError && error.retriable) || failures >= 10) throw error;
          await sleep(backoffDelay({ initialMs: 100, maxMs: 2_000 }, failures));
        }
      }
    } finally {
      await admin.disconnect();
    }
  }

  async function consume(
    logicalTopics: string[],
    groupId: string,
    concurrency: number,
    processor: RawProcessor,
    {
      ephemeral = false,
      batchWindowMs = 0,
      commitIntervalMs = 0,
    }: Pick<ConsumerOptions, 'ephemeral' | 'batchWindowMs' | 'commitIntervalMs'> = {},
  ): Promise<Subscription> {
    if (closing) throw new Error('The event bus is closed');
    const topics = logicalTopics.map((topic) => topicPrefix + topic);
    const consumer = kafka.consumer({
      groupId: topicPrefix + groupId,
      sessionTimeout: sessionTimeoutMs,
      heartbeatInterval: heartbeatIntervalMs,
      maxWaitTimeInMs: maxWaitTimeMs,
      allowAutoTopicCreation: false,
    });
    const stopping = new AbortController();
    // kafkajs restarts a consumer that crashed on a retriable error; after any other (a message too large for its
    // dead-letter topic, a bug) it stays stopped and its partitions go to the rest of the group, while the process
    // looks up. It reports itself not live instead, so that Kubernetes restarts it.
    let crashed = false;
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      log.error({ err: payload.error, groupId, restart: payload.restart }, 'Kafka consumer crashed');
      if (!payload.restart) {
        crashed = true;
        reportNotLive(stopping, `the Kafka consumer of group ${groupId} crashed and stopped (${payload.error.message})`);
      }
    });
    const inFlight = new Set<Promise<void>>();
    const timedCommits = commitIntervalMs > 0 && !ephemeral ? timedCommitter(consumer, commitIntervalMs, log, groupId) : undefined;
    /** An ephemeral group's next offset per partition ("partition:topic"), where a (re)join starts it. */
    const ephemeralPositions = new Map<string, { topic: string; partition: number; offset: string }>();

    /** Handles one message; true when it was handled (or dead-lettered) and its offset may be committed. */
    async function handle(topic: string, partition: number, message: KafkaMessage, heartbeat: () => Promise<void>): Promise<boolean> {
      // Long handlers keep the group membership alive; a failed heartbeat means a rebalance, which the
      // commit then reports.
      const beat = setInterval(() => void heartbeat().catch(() => undefined), heartbeatIntervalMs);
      try {
        return (await processor(toRawMessage(topic.slice(topicPrefix.length), partition, message), stopping.signal)) === 'commit';
      } finally {
        clearInterval(beat);
      }
    }

    try {
      if (ephemeral) {
        // An ephemeral group commits nothing, so on every join kafkajs would start each partition at its end as
        // of its first fetch, some time after subscribe returned: a message published in between would be missed,
        // or seen after a later one. Instead each partition starts where it ended when subscribe was called, and
        // a rejoin goes on after the last message handled. The seeks are made on the join, before any fetch.
        for (const position of await endOffsets(topics)) ephemeralPositions.set(`${position.partition}:${position.topic}`, position);
        consumer.on(consumer.events.GROUP_JOIN, () => {
          for (const position of ephemeralPositions.values()) consumer.seek(position);
        });
      }
      await consumer.connect();
      await consumer.subscribe({ topics, fromBeginning: ephemeral ? false : fromBeginning });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: concurrency,
        // A fetched batch of one partition is handled in order, one message at a time. Handled offsets are
        // committed without holding up the next message, with at most one commit of the partition in flight: a
        // message handled while a commit is on its way is covered by the next commit, which carries the latest
        // handled offset (the committed offset only moves forward). The batch ends by waiting until its last
        // handled message is committed. A consumer that dies mid-batch therefore has only the unhandled message
        // and those whose commit had not been sent yet redelivered; a batch of one message costs one commit.
        eachBatch: async (payload) => {
          const { batch } = payload;
          const work = (async () => {
            let handled: string | undefined;
            let committing: Promise<void> | undefined;
            const commitHandled = (): Promise<void> => {
              const offset = handled;
              if (offset === undefined) return Promise.resolve();
              handled = undefined;
              if (ephemeral) return Promise.resolve();
              return consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(offset) + 1n).toString() }]);
            };
            /** Sends a commit unless one is in flight; that one sends the latest handled offset when it is done. */
            const commitSoon = () => {
              if (committing) return;
              committing = commitHandled().then(
                () => {
                  committing = undefined;
                  if (handled !== undefined) commitSoon();
                },
                (error: unknown) => {
                  committing = undefined;
                  throw error;
                },
              );
              committing.catch(() => undefined);
            };
            for (const message of batch.messages) {
              // Once stopping, nothing more is handled: the partitions are paused, and whatever was already
              // fetched is redelivered to the group later.
              if (stopping.signal.aborted || !payload.isRunning() || payload.isStale()) break;
              if (!(await handle(batch.topic, batch.partition, message, () => payload.heartbeat()))) break;
              // Moves this consumer's fetch position past the message; the commit makes it durable.
              payload.resolveOffset(message.offset);
              if (ephemeral)
                ephemeralPositions.set(`${batch.partition}:${batch.topic}`, {
                  topic: batch.topic,
                  partition: batch.partition,
                  offset: (BigInt(message.offset) + 1n).toString(),
                });
              if (timedCommits) {
                timedCommits.handled(batch.topic, batch.partition, message.offset);
                continue;
              }
              handled = message.offset;
              commitSoon();
            }
            // Busy partitions fill up meanwhile: the next fetch brings more than one message each.
            if (batchWindowMs > 0 && !stopping.signal.aborted) await sleep(batchWindowMs, stopping.signal);
            // Every handled message committed (a failed commit rejects, as the single commits did).
            while (committing) await committing;
            if (handled !== undefined) await commitHandled();
          })();
          inFlight.add(work);
          try {
            await work;
          } finally {
            inFlight.delete(work);
          }
        },
      });
    } catch (error) {
      await consumer.disconnect().catch(() => undefined);
      throw error;
    }

    let stopped: Promise<void> | undefined;
    const subscription: Subscription = {
      stop: () =>
        (stopped ??= (async () => {
          stopping.abort();
          // A consumer that crashed for good has no group left to pause (kafkajs would throw).
          if (!crashed) consumer.pause(topics.map((topic) => ({ topic })));
          await Promise.allSettled([...inFlight]);
          if (!crashed) await timedCommits?.flush();
          timedCommits?.stop();
          await consumer.disconnect();
          clearNotLive(stopping);
          subscriptions.delete(subscription);
        })()),
    };
    subscriptions.add(subscription);
    return subscription;
  }

  return {
    async publish(messages) {
      await sendTraced(messages, (traced) =>
        send(traced.map(({ topic, key, envelope, headers = {} }) => ({ topic, key, value: encodeEnvelope(envelope), headers }))),
      );
    },

    async subscribe(options) {
      const topics = selectedTopics(options);
      const context = processorContext(options, log, (letter) => send([letter]));
      return consume(
        topics.map((topic) => topic.name),
        options.groupId,
        options.concurrency ?? DEFAULT_CONCURRENCY,
        envelopeProcessor(topics, options.handler, context),
        options,
      );
    },

    async subscribeDeadLetters(options) {
      const topics = selectedTopics(options);
      const context = processorContext(options, log, () => Promise.resolve());
      return consume(
        topics.map((topic) => topic.deadLetterTopic),
        options.groupId,
        options.concurrency ?? DEFAULT_CONCURRENCY,
        deadLetterProcessor(options.handler, context),
        options,
      );
    },

    close() {
      closing ??= (async () => {
        await Promise.allSettled([...subscriptions].map((subscription) => subscription.stop()));
        if (current.connection) await current.producer.disconnect();
        await Promise.all([...retired].map(disconnect));
      })();
      return closing;
    },
  };
}

/**
 * Commits the offsets handled since the last commit, every `intervalMs`, in one request for all partitions.
 * A failed commit (the group rebalancing, the broker away) is logged and left to the next one: the offsets it
 * carried are committed by a later commit of the same partition, or delivered again to the partition's next owner.
 */
function timedCommitter(consumer: Consumer, intervalMs: number, log: Logger, groupId: string) {
  const handled = new Map<string, { topic: string; partition: number; offset: string }>();
  let timer: NodeJS.Timeout | undefined;
  let committing: Promise<void> = Promise.resolve();

  function flush(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    committing = committing.then(async () => {
      if (handled.size === 0) return;
      const offsets = [...handled.values()];
      handled.clear();
      try {
        await consumer.commitOffsets(offsets);
      } catch (error) {
        log.warn({ err: error, groupId, partitions: offsets.length }, 'Committing handled offsets failed; a later commit carries them');
      }
    });
    return committing;
  }

  return {
    /** `offset` of the partition was handled: it is committed (as the next offset to read) by the next flush. */
    handled(topic: string, partition: number, offset: string): void {
      handled.set(`${partition}:${topic}`, { topic, partition, offset: (BigInt(offset) + 1n).toString() });
      timer ??= setTimeout(() => void flush(), intervalMs);
    },
    flush,
    stop(): void {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}

function headerValue(value: IHeaders[string]): string | undefined {
  const last = Array.isArray(value) ? value[value.length - 1] : value;
  return last?.toString();
}

function toRawMessage(topic: string, partition: number, message: KafkaMessage): RawMessage {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    const text = headerValue(value);
    if (text !== undefined) headers[name] = text;
  }
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key?.toString() ?? null,
    value: message.value?.toString() ?? null,
    headers,
  };
}

/**
 * Creates the given topics and their dead-letter topics if missing (existing ones are left as they are).
 * Returns the names it created. The replication factor is the cluster's own `default.replication.factor` unless
 * given (-1 in CreateTopics, Kafka 2.4+): 1 on a single development broker, what the operator configured on a
 * production cluster, never a hard-coded single copy on a cluster of several brokers.
 */
export async function ensureTopics(
  kafka: Kafka,
  topics: readonly (AnyTopic | string)[],
  partitions = 3,
  { replicationFactor = -1, topicPrefix = '' }: { replicationFactor?: number; topicPrefix?: string } = {},
): Promise<string[]> {
  const names = topics.flatMap((topic) => {
    const name = typeof topic === 'string' ? topic : topic.name;
    return [topicPrefix + name, topicPrefix + deadLetterTopicName(name)];
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = [...new Set(names)].filter((name) => !existing.has(name));
    if (missing.length > 0) {
      await admin.createTopics({
        waitForLeaders: false,
        topics: missing.map((topic) => ({ topic, numPartitions: partitions, replicationFactor })),
      });
      await waitForLeaders(admin, missing);
    }
    return missing;
  } finally {
    await admin.disconnect();
  }
}

/**
 * Waits until every partition of `topics` has a leader. Not kafkajs's waitForLeaders, which gives up when the
 * broker it asks has not yet heard of a topic just created (KRaft spreads the metadata after the create returns; a
 * broker that has just started shows it). The tests' topics (@fin/testing) wait the same way.
 */
export async function waitForLeaders(admin: Admin, topics: string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const led = await admin.fetchTopicMetadata({ topics }).then(
      ({ topics: found }) => found.every(({ partitions }) => partitions.length > 0 && partitions.every(({ leader }) => leader >= 0)),
      (error: unknown) => {
        // The topic is not known yet: itself, or as the cause once kafkajs's own retries are spent.
        const { type, cause } = error as { type?: unknown; cause?: { type?: unknown } };
        if ((type ?? cause?.type) !== 'UNKNOWN_TOPIC_OR_PARTITION' || Date.now() > deadline) throw error;
        return false;
      },
    );
    if (led) return;
    if (Date.now() > deadline) throw new Error(`The partitions of ${topics.join(', ')} had no leader after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const PINO_LEVEL: Record<logLevel, 'error' | 'warn' | 'info' | 'debug' | undefined> = {
  [logLevel.NOTHING]: undefined,
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** A kafkajs client whose own log lines go to `logger` (at WARN and above unless `logLevel` says otherwise). */
export function createKafka({ logger, ...config }: KafkaConfig & { logger: Logger }): Kafka {
  const kafkaLogger = logger.child({ component: 'kafkajs' });
  return new Kafka({
    logLevel: logLevel.WARN,
    ...config,
    logCreator:
      () =>
      ({ namespace, level, log: { message, ...fields } }: LogEntry) => {
        const method = PINO_LEVEL[level];
        if (method) kafkaLogger[method]({ namespace, ...fields }, message);
      },
  });
}
