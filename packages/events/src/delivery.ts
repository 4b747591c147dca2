import { TRACEPARENT_HEADER, type Logger } from '@fin/log';
import { eventsHandled } from '@fin/metrics';
import { SpanKind, withRemoteSpan } from '@fin/tracing';
import { type Backoff, backoffDelay, errorMessage, sleep } from './backoff';
import {
  type ConsumerOptions,
  type DeadLetter,
  type DeadLetterHandler,
  type DeliveryMeta,
  type EventHandler,
  type EventHeaders,
  type TopicSelection,
} from './bus';
import { decodeEnvelope, decodeEnvelopeLazily, type EnvelopeOf, PoisonMessageError } from './envelope';
import { type AnyTopic, deadLetterTopicName } from './topic';
import { jobAttributes, messageAttributes } from './tracing';

/** A message as read from a topic, before decoding. */
export interface RawMessage {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: string | null;
  headers: EventHeaders;
}

/** A message as written to a topic, already encoded. */
export interface RawOutgoingMessage {
  topic: string;
  key: string | null;
  value: string | null;
  headers: EventHeaders;
}

/** `commit`: done with the message (handled or dead-lettered). `abandon`: the subscription is stopping; redeliver. */
export type Outcome = 'commit' | 'abandon';
export type RawProcessor = (message: RawMessage, signal: AbortSignal) => Promise<Outcome>;

const DLQ_HEADERS = {
  error: 'x-dlq-error',
  attempts: 'x-dlq-attempts',
  reason: 'x-dlq-reason',
  groupId: 'x-dlq-group',
  failedAt: 'x-dlq-failed-at',
  originalTopic: 'x-original-topic',
  originalPartition: 'x-original-partition',
  originalOffset: 'x-original-offset',
} as const;

const DEFAULT_MAX_ATTEMPTS = 5;
const DEFAULT_BACKOFF: Backoff = { initialMs: 200, maxMs: 10_000 };
export const DEFAULT_CONCURRENCY = 3;
const MAX_ERROR_LENGTH = 2_000;

export interface ProcessorContext {
  groupId: string;
  maxAttempts: number;
  backoff: Backoff;
  logger: Logger;
  /** The payload parsed as the handler reads it (ConsumerOptions.payloadOnRead), not before the handler runs. */
  payloadOnRead: boolean;
  /** Publishes a dead letter durably; a rejection leaves the message uncommitted. */
  deadLetter(message: RawOutgoingMessage): Promise<void>;
}

export function processorContext(
  options: ConsumerOptions,
  logger: Logger,
  deadLetter: (message: RawOutgoingMessage) => Promise<void>,
): ProcessorContext {
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new Error('maxAttempts must be a positive integer');
  return {
    groupId: options.groupId,
    maxAttempts,
    backoff: { ...DEFAULT_BACKOFF, ...options.backoff },
    logger: logger.child({ groupId: options.groupId }),
    payloadOnRead: options.payloadOnRead === true,
    deadLetter,
  };
}

export function selectedTopics<T extends AnyTopic>(selection: TopicSelection<T>): T[] {
  const topics = selection.topics ? [...selection.topics] : [selection.topic];
  if (topics.length === 0) throw new Error('A subscription needs at least one topic');
  if (new Set(topics.map((topic) => topic.name)).size !== topics.length) throw new Error('A topic is selected twice');
  return topics;
}

type AttemptResult =
  { status: 'handled' } | { status: 'failed'; error: unknown } | { status: 'poison'; error: unknown } | { status: 'aborted' };

async function withRetries(
  message: RawMessage,
  signal: AbortSignal,
  context: ProcessorContext,
  handle: (attempt: number) => Promise<void>,
): Promise<AttemptResult> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= context.maxAttempts; attempt += 1) {
    if (signal.aborted) return { status: 'aborted' };
    try {
      await handle(attempt);
      return { status: 'handled' };
    } catch (error) {
      // A payload its schema rejects, found as the handler read it: no attempt can handle it.
      if (error instanceof PoisonMessageError) return { status: 'poison', error };
      lastError = error;
      context.logger.warn(
        { err: error, topic: message.topic, partition: message.partition, offset: message.offset, attempt },
        'Event handler failed',
      );
    }
    if (attempt < context.maxAttempts && !(await sleep(backoffDelay(context.backoff, attempt), signal))) {
      return { status: 'aborted' };
    }
  }
  return { status: 'failed', error: lastError };
}

function deadLetterOf(
  message: RawMessage,
  context: ProcessorContext,
  reason: DeadLetter['reason'],
  error: unknown,
  attempts: number,
): RawOutgoingMessage {
  return {
    topic: deadLetterTopicName(message.topic),
    key: message.key,
    value: message.value,
    headers: {
      ...message.headers,
      [DLQ_HEADERS.error]: errorMessage(error).slice(0, MAX_ERROR_LENGTH),
      [DLQ_HEADERS.attempts]: String(attempts),
      [DLQ_HEADERS.reason]: reason,
      [DLQ_HEADERS.groupId]: context.groupId,
      [DLQ_HEADERS.failedAt]: new Date().toISOString(),
      [DLQ_HEADERS.originalTopic]: message.topic,
      [DLQ_HEADERS.originalPartition]: String(message.partition),
      [DLQ_HEADERS.originalOffset]: message.offset,
    },
  };
}

function metaOf(message: RawMessage, attempt: number, signal: AbortSignal): DeliveryMeta {
  const { topic, partition, offset, key, headers } = message;
  return { topic, partition, offset, key, headers, attempt, signal };
}

/**
 * Decodes each message with its topic's schema and runs the handler with retries. Poison is dead-lettered
 * at once; a handler that fails `maxAttempts` times gets its message dead-lettered. Either way the message is
 * then committed, so one bad message never blocks its partition.
 */
export function envelopeProcessor<T extends AnyTopic>(
  topics: readonly T[],
  handler: EventHandler<T>,
  context: ProcessorContext,
): RawProcessor {
  const byName = new Map<string, T>(topics.map((topic) => [topic.name, topic]));
  return async (message, signal) => {
    const topic = byName.get(message.topic);
    if (!topic) throw new Error(`Received a message from unsubscribed topic ${message.topic}`);
    const poison = async (error: unknown): Promise<Outcome> => {
      context.logger.error(
        { err: error, topic: message.topic, partition: message.partition, offset: message.offset },
        'Poison message dead-lettered',
      );
      await context.deadLetter(deadLetterOf(message, context, 'poison', error, 0));
      eventsHandled.inc({ group: context.groupId, topic: message.topic, outcome: 'dead_lettered' });
      return 'commit';
    };
    let envelope: EnvelopeOf<T>;
    try {
      envelope = context.payloadOnRead ? decodeEnvelopeLazily(topic, message.value) : decodeEnvelope(topic, message.value);
    } catch (error) {
      if (!(error instanceof PoisonMessageError)) throw error;
      return poison(error);
    }
    // The handler runs in a span of the publisher's trace (a CONSUMER span when traces are exported), so its
    // logs and the events it writes continue it. (A payload parsed on read is not read for the span: the key
    // names the job on job topics.)
    const attributes = {
      ...messageAttributes(message.topic, message.key, 'process'),
      'messaging.consumer.group.name': context.groupId,
      ...(context.payloadOnRead ? {} : jobAttributes(envelope.payload)),
    };
    const result = await withRemoteSpan(
      `process ${message.topic}`,
      message.headers[TRACEPARENT_HEADER],
      { kind: SpanKind.CONSUMER, attributes },
      () => withRetries(message, signal, context, (attempt) => handler(envelope, metaOf(message, attempt, signal))),
    );
    if (result.status === 'aborted') return 'abandon';
    if (result.status === 'poison') return poison(result.error);
    if (result.status === 'failed') {
      context.logger.error(
        { err: result.error, topic: message.topic, eventId: envelope.id, attempts: context.maxAttempts },
        'Event dead-lettered after its last attempt',
      );
      await context.deadLetter(deadLetterOf(message, context, 'exhausted', result.error, context.maxAttempts));
    }
    eventsHandled.inc({ group: context.groupId, topic: message.topic, outcome: result.status === 'failed' ? 'dead_lettered' : 'ok' });
    return 'commit';
  };
}

const DLQ_HEADER_NAMES = new Set<string>(Object.values(DLQ_HEADERS));

function decodeDeadLetter(message: RawMessage): DeadLetter {
  const header = (name: string): string => message.headers[name] ?? '';
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers)) if (!DLQ_HEADER_NAMES.has(name)) headers[name] = value;
  return {
    originalTopic: header(DLQ_HEADERS.originalTopic),
    originalPartition: Number(header(DLQ_HEADERS.originalPartition)),
    originalOffset: header(DLQ_HEADERS.originalOffset),
    groupId: header(DLQ_HEADERS.groupId),
    reason: header(DLQ_HEADERS.reason) === 'poison' ? 'poison' : 'exhausted',
    error: header(DLQ_HEADERS.error),
    attempts: Number(header(DLQ_HEADERS.attempts)),
    failedAt: header(DLQ_HEADERS.failedAt),
    key: message.key,
    value: message.value,
    headers,
  };
}

/**
 * Hands dead letters to `handler` with the same retries. A dead letter whose handler keeps failing is logged
 * and committed: there is no dead-letter topic of a dead-letter topic, and the letter stays in the topic.
 */
export function deadLetterProcessor(handler: DeadLetterHandler, context: ProcessorContext): RawProcessor {
  return async (message, signal) => {
    const letter = decodeDeadLetter(message);
    const result = await withRetries(message, signal, context, (attempt) => handler(letter, metaOf(message, attempt, signal)));
    if (result.status === 'aborted') return 'abandon';
    if (result.status === 'failed') {
      context.logger.error(
        { err: result.error, topic: message.topic, partition: message.partition, offset: message.offset },
        'Dead-letter handler failed on its last attempt; the letter is skipped',
      );
    }
    return 'commit';
  };
}
