import net from 'node:net';
import { TEST_KAFKA_BROKERS, createTopics, testKafka, uniqueName } from '@fin/testing';
import { type ISocketFactory, Kafka, logLevel } from 'kafkajs';
import { createEnvelope, createKafkaBus, type EventBus } from '../src';
import { testLogger, testTopic } from './helpers';

/**
 * The wire between the bus's client and the real broker, with the fault that an outage brings: a produce request
 * reaches the broker, which writes it, but its answer never comes back (the connection drops), and the broker
 * stays unreachable until the client gives up. The client cannot know whether the batch was written.
 */
function faultyWire() {
  const state = { down: false, dropAnswerToNextProduce: false };
  const socketFactory: ISocketFactory = ({ host, port, onConnect }) => {
    // While down, every connection is refused: nothing listens on port 1.
    const socket = state.down ? net.connect({ host: '127.0.0.1', port: 1 }, onConnect) : net.connect({ host, port }, onConnect);
    const write = socket.write.bind(socket) as (chunk: Buffer | string, encoding: BufferEncoding) => boolean;
    socket.write = ((chunk: Buffer | string, encoding: BufferEncoding) => {
      // A request is [int32 size][int16 api key]…; the key of Produce is 0.
      const produce = Buffer.isBuffer(chunk) && chunk.length >= 6 && chunk.readInt16BE(4) === 0;
      if (!produce || !state.dropAnswerToNextProduce) return write(chunk, encoding);
      state.dropAnswerToNextProduce = false;
      state.down = true;
      // Nothing more is read from this connection: the request goes out, the broker writes the batch and answers,
      // and the answer is never seen before the connection drops.
      socket.pause();
      setTimeout(() => socket.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })), 300);
      return write(chunk, encoding);
    }) as typeof socket.write;
    return socket;
  };
  return { state, socketFactory };
}

describe('the Kafka bus after a publish whose outcome it could not know', () => {
  const topic = testTopic('producer-recovery');
  const wire = faultyWire();
  let bus: EventBus;
  let removeTopics: () => Promise<void>;

  beforeAll(async () => {
    removeTopics = await createTopics(testKafka(), [topic.name, topic.deadLetterTopic], 1);
    // Few, quick retries: the client gives up while the broker is still away.
    const kafka = new Kafka({
      clientId: uniqueName('producer-recovery'),
      brokers: TEST_KAFKA_BROKERS,
      logLevel: logLevel.NOTHING,
      socketFactory: wire.socketFactory,
      retry: { retries: 2, initialRetryTime: 50, maxRetryTime: 200 },
    });
    bus = createKafkaBus({ kafka, logger: testLogger() });
  });
  afterAll(async () => {
    await bus.close();
    await removeTopics();
  });

  const message = (seq: number, label: string) => ({
    topic: topic.name,
    key: 'one-partition',
    envelope: createEnvelope(topic, { seq, label }),
  });

  it('publishes again once the broker is back, and loses nothing the broker did not write', async () => {
    await bus.publish([message(1, 'before')]);

    // Written by the broker, but the bus is told it failed.
    wire.state.dropAnswerToNextProduce = true;
    await expect(bus.publish([message(2, 'unknown outcome'), message(3, 'unknown outcome')])).rejects.toThrow();

    // Back: the next publish goes through. An idempotent producer that went on with the sequence numbers it had
    // rolled back would be refused (OUT_OF_ORDER_SEQUENCE_NUMBER, for good) or silently dropped as a duplicate.
    wire.state.down = false;
    await bus.publish([message(4, 'after')]);
    await bus.publish([message(5, 'after'), message(6, 'after')]);

    const consumer = testKafka().consumer({ groupId: uniqueName('producer-recovery-reader') });
    const seen: number[] = [];
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: topic.name, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`only ${seen.join(', ')} arrived`)), 20_000);
        void consumer.run({
          eachMessage: async ({ message: { value } }) => {
            seen.push((JSON.parse(value?.toString() ?? '{}') as { payload: { seq: number } }).payload.seq);
            if ([4, 5, 6].every((seq) => seen.includes(seq))) {
              clearTimeout(timer);
              resolve();
            }
          },
        });
      });
    } finally {
      await consumer.disconnect();
    }
    // At least once: the batch of unknown outcome was written (and may be published again by its caller).
    expect(seen).toEqual(expect.arrayContaining([1, 2, 3, 4, 5, 6]));
  }, 60_000);
});
