export { type AnyTopic, defineCatalog, defineTopic } from './topic';
export { Envelope, type EnvelopeOf, InvalidEventError, PoisonMessageError, createEnvelope, decodeEnvelope } from './envelope';
export {
  type JobEventsTopic,
  JobRequestedPayload,
  JobStateEventPayload,
  JobType,
  SEQ_PER_ATTEMPT,
  eventCatalog,
  jobsEventsTopic,
  jobRequestTopics,
} from './catalog';
export { OBSERVER_BATCHING, type DeadLetter, type DeliveryMeta, type EventBus, type Subscription, createPublisher } from './bus';
export { createKafka, createKafkaBus, ensureTopics, waitForLeaders } from './kafka-bus';
export { type MemoryEventBus, createMemoryBus } from './memory-bus';
export { OUTBOX_KEY_LOCK_CLASS, type PreparedOutboxRow, appendToOutbox, withOutboxRow } from './outbox';
export { type OutboxRelay, type OutboxRelayOptions, createOutboxRelay } from './relay';
export { processOnce } from './idempotency';
export { createConsumerLagMonitor } from './lag-monitor';
export { KafkaStartError, connectKafkaBus, kafkaClientConfig, kafkaConfigShape, type KafkaConfig } from './kafka-config';
