export { createEmptyDatabase, createTestDatabase, runMigrationCommand, type TestDatabase } from './database';
export { TEST_KAFKA_BROKERS, createTopics, testKafka, uniqueName } from './kafka';
export { secureTestKafka, type SecureTestKafka } from './secure-kafka';
export { leakedSince, openHandles, waitForNoLeaks } from './leak-environment';
export { waitFor } from './wait';
export { openEventStream, type EventStreamClient, type SseFrame } from './event-stream';
export { testCustomerToolsKey } from './secrets';
export { freePort, runCommand, type Finished } from './processes';
export { countingPool, type CountingPool } from './counting-pool';
