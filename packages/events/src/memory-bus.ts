import { type Logger } from '@fin/log';
import { encodeEnvelope, type EventBus, type EventHeaders, type Subscription } from './bus';
import {
  DEFAULT_CONCURRENCY,
  deadLetterProcessor,
  envelopeProcessor,
  type Outcome,
  processorContext,
  type RawMessage,
  type RawOutgoingMessage,
  type RawProcessor,
  selectedTopics,
} from './delivery';

export interface MemoryBusOptions {
  logger: Logger;
  /** Partitions per topic: messages of one key share a partition and keep their order (default 3). */
  partitions?: number;
  /** Oldest messages beyond this many per partition are dropped even if some group has not read them. */
  maxRetainedPerPartition?: number;
}

/** The in-process bus, plus wire-level access that tests and tooling use. */
export interface MemoryEventBus extends EventBus {
  /** Appends a message exactly as given (no envelope encoding), e.g. a malformed one. */
  publishRaw(message: RawOutgoingMessage): Promise<void>;
  /** The next offset each partition of `topic` will deliver to `groupId` (what Kafka calls its committed offsets). */
  committedOffsets(groupId: string, topic: string): number[];
}

interface StoredMessage {
  key: string | null;
  value: string | null;
  headers: EventHeaders;
}

/** Resolves every pending wait() at the next notify(). */
class Signal {
  private waiters: Array<() => void> = [];
  wait(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}

class PartitionLog {
  start = 0;
  readonly messages: StoredMessage[] = [];
  readonly changed = new Signal();
  get end(): number {
    return this.start + this.messages.length;
  }
  at(offset: number): StoredMessage | undefined {
    return this.messages[offset - this.start];
  }
  trimBefore(offset: number): void {
    const start = Math.min(offset, this.end);
    if (start > this.start) {
      this.messages.splice(0, start - this.start);
      this.start = start;
    }
  }
}

class Semaphore {
  private waiting: Array<() => void> = [];
  constructor(private available: number) {}
  async acquire(): Promise<void> {
    if (this.available > 0) {
      this.available -= 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.available += 1;
  }
}

class Member {
  active = true;
  readonly stopping = new AbortController();
  readonly inFlight = new Set<Promise<Outcome>>();
  private readonly slots: Semaphore;
  constructor(
    readonly topics: ReadonlySet<string>,
    private readonly processor: RawProcessor,
    concurrency: number,
  ) {
    this.slots = new Semaphore(concurrency);
  }
  async process(message: RawMessage): Promise<Outcome> {
    await this.slots.acquire();
    try {
      if (this.stopping.signal.aborted) return 'abandon';
      const work = this.processor(message, this.stopping.signal);
      this.inFlight.add(work);
      try {
        return await work;
      } finally {
        this.inFlight.delete(work);
      }
    } finally {
      this.slots.release();
    }
  }
}

interface Group {
  readonly members: Member[];
  /** Next offset to deliver, per `${topic}\0${partition}`. */
  readonly committed: Map<string, number>;
  /** The loop delivering each partition to this group, while the group has a member reading its topic. */
  readonly runners: Map<string, Promise<void>>;
  /** Lives as long as its subscription (ConsumerOptions.ephemeral): its positions are not reported as committed. */
  readonly ephemeral?: boolean;
}

function partitionOf(key: string | null, partitions: number, roundRobin: number): number {
  if (key === null) return roundRobin % partitions;
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i += 1) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % partitions;
}

/**
 * The event bus inside one process, for single-process mode. Same contract as Kafka: per-key order (a key
 * maps to one partition, delivered one message at a time per group), at-least-once with retries and
 * dead-lettering, every group sees every message, and the members of a group share its partitions.
 * Messages are kept encoded, so consumers parse exactly what Kafka consumers would. A message is kept until
 * every group with a live subscription to its topic has consumed it (or the per-partition cap drops it), so a
 * group that resubscribes later resumes from its offset or, if that was dropped, from the oldest message kept.
 * Nothing survives the process: this is for single-process mode, not a durable queue.
 */
export function createMemoryBus({ logger, partitions = 3, maxRetainedPerPartition = 100_000 }: MemoryBusOptions): MemoryEventBus {
  const log = logger.child({ component: 'memory-bus' });
  const topics = new Map<string, PartitionLog[]>();
  const groups = new Map<string, Group>();
  const subscriptions = new Set<Subscription>();
  let published = 0;
  let closing: Promise<void> | undefined;
  let closed = false;

  function topicLog(topic: string): PartitionLog[] {
    let logs = topics.get(topic);
    if (!logs) topics.set(topic, (logs = Array.from({ length: partitions }, () => new PartitionLog())));
    return logs;
  }

  function partitionLog(topic: string, partition: number): PartitionLog {
    const found = topicLog(topic)[partition];
    if (!found) throw new Error(`No partition ${partition} of ${topic}`);
    return found;
  }

  function append(messages: readonly RawOutgoingMessage[]): void {
    if (closed) throw new Error('The event bus is closed');
    for (const { topic, key, value, headers } of messages) {
      const partition = partitionLog(topic, partitionOf(key, partitions, published++));
      partition.messages.push({ key, value, headers: { ...headers } });
      if (partition.messages.length > maxRetainedPerPartition) partition.trimBefore(partition.end - maxRetainedPerPartition);
      partition.changed.notify();
    }
  }

  /** Drops what every group with a live member has already consumed. */
  function trim(topic: string, partition: number): void {
    const key = `${topic}\0${partition}`;
    let lowest = Infinity;
    for (const group of groups.values()) {
      if (group.members.some((member) => member.active && member.topics.has(topic))) {
        lowest = Math.min(lowest, group.committed.get(key) ?? 0);
      }
    }
    if (Number.isFinite(lowest)) partitionLog(topic, partition).trimBefore(lowest);
  }

  async function deliver(group: Group, topic: string, partition: number): Promise<void> {
    const key = `${topic}\0${partition}`;
    const messages = partitionLog(topic, partition);
    for (;;) {
      const members = group.members.filter((member) => member.active && member.topics.has(topic));
      if (closed || members.length === 0) {
        group.runners.delete(key);
        return;
      }
      const offset = Math.max(group.committed.get(key) ?? 0, messages.start);
      const message = messages.at(offset);
      if (!message) {
        await messages.changed.wait();
        continue;
      }
      const member = members[partition % members.length] as Member;
      let outcome: Outcome;
      try {
        outcome = await member.process({ topic, partition, offset: String(offset), ...message });
      } catch (error) {
        // Only a failed dead-letter write lands here; the message stays uncommitted and is tried again.
        log.error({ err: error, topic, partition, offset }, 'Delivery failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        continue;
      }
      if (outcome === 'commit') {
        group.committed.set(key, offset + 1);
        trim(topic, partition);
      }
    }
  }

  function join(groupId: string, topicNames: string[], processor: RawProcessor, concurrency: number, ephemeral = false): Subscription {
    if (closing) throw new Error('The event bus is closed');
    let group = groups.get(groupId);
    if (!group) {
      group = { members: [], committed: new Map(), runners: new Map(), ephemeral };
      groups.set(groupId, group);
      // A group of one subscription's lifetime starts at the newest messages.
      if (ephemeral)
        for (const topic of topicNames)
          topicLog(topic).forEach((partition, index) => group?.committed.set(`${topic}\0${index}`, partition.end));
    }
    const member = new Member(new Set(topicNames), processor, concurrency);
    group.members.push(member);
    const joined = group;
    for (const topic of topicNames) {
      topicLog(topic).forEach((partition, index) => {
        partition.changed.notify();
        const key = `${topic}\0${index}`;
        if (!joined.runners.has(key)) joined.runners.set(key, deliver(joined, topic, index));
      });
    }
    let stopped: Promise<void> | undefined;
    const subscription: Subscription = {
      stop: () =>
        (stopped ??= (async () => {
          member.active = false;
          member.stopping.abort();
          for (const topic of topicNames) for (const partition of topicLog(topic)) partition.changed.notify();
          await Promise.allSettled([...member.inFlight]);
          joined.members.splice(joined.members.indexOf(member), 1);
          subscriptions.delete(subscription);
        })()),
    };
    subscriptions.add(subscription);
    return subscription;
  }

  const publishRaw = (message: RawOutgoingMessage) => Promise.try(() => append([message]));

  return {
    publish: (messages) =>
      Promise.try(() =>
        append(messages.map(({ topic, key, envelope, headers = {} }) => ({ topic, key, value: encodeEnvelope(envelope), headers }))),
      ),

    publishRaw,

    subscribe: (options) =>
      Promise.try(() => {
        const topics = selectedTopics(options);
        const processor = envelopeProcessor(topics, options.handler, processorContext(options, log, publishRaw));
        const names = topics.map((topic) => topic.name);
        return join(options.groupId, names, processor, options.concurrency ?? DEFAULT_CONCURRENCY, options.ephemeral);
      }),

    subscribeDeadLetters: (options) =>
      Promise.try(() => {
        const topics = selectedTopics(options);
        const processor = deadLetterProcessor(
          options.handler,
          processorContext(options, log, () => Promise.resolve()),
        );
        const names = topics.map((topic) => topic.deadLetterTopic);
        return join(options.groupId, names, processor, options.concurrency ?? DEFAULT_CONCURRENCY);
      }),

    committedOffsets(groupId, topic) {
      const found = groups.get(groupId);
      const group = found?.ephemeral === true ? undefined : found;
      return topicLog(topic).map((_, index) => group?.committed.get(`${topic}\0${index}`) ?? 0);
    },

    close() {
      closing ??= (async () => {
        // In-flight handlers may still dead-letter, so appends stay open until every subscription has stopped.
        await Promise.allSettled([...subscriptions].map((subscription) => subscription.stop()));
        closed = true;
        for (const partitionLogs of topics.values()) for (const partition of partitionLogs) partition.changed.notify();
        await Promise.allSettled([...groups.values()].flatMap((group) => [...group.runners.values()]));
      })();
      return closing;
    },
  };
}
