// fin_kafka_consumer_lag from the broker's own figures: for every consumer group of this deployment, each
// partition's end offset minus the group's committed offset, read with the admin API on a timer of its own. A
// consumer's fetch loop cannot report its own stall (a hung handler, a crashed consumer, workers scaled to zero),
// so this reads the committed offsets that stop moving instead: the lag of a stalled group keeps growing.
import { type Logger } from '@fin/log';
import { consumerLag, refreshEvery } from '@fin/metrics';
import { type Admin, type Kafka } from 'kafkajs';

export interface ConsumerLagMonitorOptions {
  kafka: Kafka;
  logger: Logger;
  /**
   * KAFKA_TOPIC_PREFIX: only groups and topics whose names start with it are this deployment's, and they are
   * reported without it (as the catalog names them). Empty: every consumer group of the cluster.
   */
  topicPrefix?: string;
  /** Time between two readings (default 30 s). Each reading costs a few small admin requests per group and topic. */
  intervalMs?: number;
}

/** One partition's lag for one group, as reported (names without the prefix). */
interface LagReading {
  group: string;
  topic: string;
  partition: number;
  lag: number;
}

export interface ConsumerLagMonitor {
  /** Reads now and then every `intervalMs` in the background until stopped. */
  start(): void;
  /** Waits for a reading in flight, stops the timer and disconnects the admin client. */
  stop(): Promise<void>;
  /** One reading: sets the gauge to exactly these series (groups and partitions gone since are dropped). */
  measure(): Promise<LagReading[]>;
}

const offset = (text: string) => BigInt(text);

/** The lag of each partition a group has committed offsets on; a partition without a commit counts from its start. */
async function readLag(admin: Admin, topicPrefix: string): Promise<LagReading[]> {
  const { groups } = await admin.listGroups();
  // Consumer groups (not Kafka Connect's and the like); '' is a group whose offsets were set by a tool, without members.
  const ours = groups.filter(
    ({ groupId, protocolType }) => (protocolType === 'consumer' || protocolType === '') && groupId.startsWith(topicPrefix),
  );
  const committed = await Promise.all(ours.map(async ({ groupId }) => ({ groupId, topics: await admin.fetchOffsets({ groupId }) })));
  const topics = new Set(
    committed.flatMap(({ topics: list }) => list.map(({ topic }) => topic)).filter((topic) => topic.startsWith(topicPrefix)),
  );
  const ends = new Map(await Promise.all([...topics].map(async (topic) => [topic, await admin.fetchTopicOffsets(topic)] as const)));
  const readings: LagReading[] = [];
  for (const { groupId, topics: list } of committed) {
    for (const { topic, partitions } of list) {
      const end = ends.get(topic);
      if (end === undefined) continue;
      for (const { partition, offset: at } of partitions) {
        const bounds = end.find((entry) => entry.partition === partition);
        if (bounds === undefined) continue;
        const from = offset(at) < 0n ? offset(bounds.low) : offset(at);
        const lag = offset(bounds.high) - from;
        readings.push({
          group: groupId.slice(topicPrefix.length),
          topic: topic.slice(topicPrefix.length),
          partition,
          lag: Number(lag > 0n ? lag : 0n),
        });
      }
    }
  }
  return readings;
}

/** Reports the consumer lag of every group of this deployment from the broker (see the file's comment). */
export function createConsumerLagMonitor({
  kafka,
  logger,
  topicPrefix = '',
  intervalMs = 30_000,
}: ConsumerLagMonitorOptions): ConsumerLagMonitor {
  const log = logger.child({ component: 'consumer-lag' });
  const admin = kafka.admin();
  let connected: Promise<void> | undefined;

  async function measure(): Promise<LagReading[]> {
    connected ??= admin.connect().catch((error: unknown) => {
      connected = undefined;
      throw error;
    });
    await connected;
    const readings = await readLag(admin, topicPrefix);
    // Replaced in one synchronous step, so a scrape never sees half a reading.
    consumerLag.reset();
    for (const { group, topic, partition, lag } of readings) consumerLag.set({ group, topic, partition: String(partition) }, lag);
    return readings;
  }

  const refresher = refreshEvery(intervalMs, measure, (error) =>
    log.warn({ err: error }, 'Reading the consumer lag from Kafka failed; keeping the last figures'),
  );
  return {
    start: () => {
      refresher.start();
    },
    async stop() {
      await refresher.stop();
      if (connected) await admin.disconnect();
      connected = undefined;
    },
    measure,
  };
}
