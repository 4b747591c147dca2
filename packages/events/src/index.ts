export {
  type AnyTopic,
  type Catalog,
  type DeadLetterTopicName,
  type PayloadInput,
  type PayloadOf,
  type TopicDefinition,
  deadLetterTopicName,
  defineCatalog,
  defineTopic,
} from './topic';
export {
  Envelope,
  type EnvelopeOf,
  type EnvelopeOptions,
  InvalidEventError,
  PoisonMessageError,
  createEnvelope,
  decodeEnvelope,
} from './envelope';
export {
  type EventCatalog,
  type JobEventsTopic,
  JobRequestedPayload,
  JobStateEventPayload,
  JobStatus,
  JobType,
  SEQ_PER_ATTEMPT,
  eventCatalog,
  jobsEventsTopic,
  jobRequestTopics,
} from './catalog';
export {
  type ConsumerOptions,
  OBSERVER_BATCHING,
  type DeadLetter,
  type DeadLetterHandler,
  type DeadLetterSubscribeOptions,
  type DeliveryMeta,
  type EventBus,
  type EventHandler,
  type EventHeaders,
  type OutgoingMessage,
  type PublishOptions,
  type Publisher,
  type SubscribeOptions,
  type Subscription,
  type TopicSelection,
  createPublisher,
} from './bus';
export { DLQ_HEADERS, type RawMessage, type RawOutgoingMessage } from './delivery';
export { type KafkaBusOptions, createKafka, createKafkaBus, ensureTopics, waitForLeaders } from './kafka-bus';
export { type MemoryBusOptions, type MemoryEventBus, createMemoryBus } from './memory-bus';
export { type AppendOptions, OUTBOX_KEY_LOCK_CLASS, type PreparedOutboxRow, appendToOutbox, withOutboxRow } from './outbox';
export { type OutboxRelay, type OutboxRelayOptions, createOutboxRelay } from './relay';
export { type ProcessOnceResult, processOnce } from './idempotency';
export { type ConsumerLagMonitor, createConsumerLagMonitor } from './lag-monitor';
export { KafkaStartError, connectKafkaBus, kafkaClientConfig, kafkaConfigShape, type KafkaConfig } from './kafka-config';
