// What a product's worker subscribes to, asked of @fin/job-kit itself: the KEDA ScaledObjects must watch the lag
// of exactly this consumer group on exactly this topic, or they scale on nothing.
import { type EventBus, type JobType } from '@fin/events';
import { createJobWorker } from '@fin/job-kit';
import { createLogger } from '@fin/log';
import pg from 'pg';

export interface WorkerSubscription {
  topic: string;
  groupId: string;
}

export async function workerSubscription(jobType: JobType): Promise<WorkerSubscription> {
  let subscription: WorkerSubscription | undefined;
  const bus = {
    subscribe: (options: { topic: { name: string }; groupId: string }) => {
      subscription = { topic: options.topic.name, groupId: options.groupId };
      return Promise.resolve({ stop: () => Promise.resolve() });
    },
  } as unknown as EventBus;
  const notCalled = (): never => {
    throw new Error('a worker that only subscribes runs no job');
  };
  const worker = createJobWorker({
    bus,
    jobType,
    // Never connected: a pool opens no connection until a query, and this worker runs none.
    pool: new pg.Pool(),
    logger: createLogger({ service: 'infra-test', level: 'silent' }),
    classify: notCalled,
    run: notCalled,
    timeLimitMs: 1_000,
  });
  await worker.start();
  await worker.stop();
  if (!subscription) throw new Error(`the ${jobType} worker subscribed to nothing`);
  return subscription;
}
