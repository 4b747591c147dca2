import { AsyncJobResponse, WebhookCreated, WebhookEvent } from '@fin/contracts';
import { testCertificate } from '@fin/customer-tools/testing';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { standardWebhooksProblem, startFakeReceiver, type FakeReceiver, type ReceivedDelivery } from '@fin/webhooks/testing';
import { bySize, reportSurvival, startFaultSystem, type FaultSystem } from '../../src/reliability';
import { scriptedModel } from '../../src/scripted-model';
import type { System } from '../../src/system';

/** Jobs finished while the jobs service is dead, beside the one whose delivery was in flight when it was killed. */
const JOBS_WHILE_DOWN = bySize({ ci: 4, full: 20 });
/** Time limit of one attempt: the lease of a delivery in flight runs out 5 s after it. */
const TIMEOUT_MS = 2_000;

/**
 * The jobs service, which consumes job events for webhooks (group webhooks) and runs the dispatcher, is killed
 * (kill -9) while a delivery is in flight (the receiver holds the request open), and stays dead while more jobs
 * finish. Restarted, it must deliver everything: the delivery it was holding (its lease expires and it is sent
 * again, with the same webhook-id), and the events it had not consumed yet (its offsets were not committed).
 */
describe('fault: the process sending webhooks killed mid-delivery', () => {
  let db: TestDatabase;
  let fault: FaultSystem | undefined;
  let system: System;
  let key: string;
  let receiver: FakeReceiver;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await startFakeReceiver();
    fault = await startFaultSystem({
      databaseUrl: db.url,
      tenant: 'hooks',
      model: scriptedModel().handler,
      env: {
        // The jobs service sends to the loopback receiver (test configuration); a killed consumer's partitions are
        // handed on after 6 s.
        CUSTOMER_TOOLS_ALLOW_LOOPBACK: 'true',
        NODE_EXTRA_CA_CERTS: (await testCertificate()).certFile,
        WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
        WEBHOOK_DISPATCH_INTERVAL_MS: '200',
        KAFKA_SESSION_TIMEOUT_MS: '6000',
      },
      system: { products: ['portal', 'news'] },
    });
    ({ system, key } = fault);
  }, 120_000);

  afterAll(async () => {
    await fault?.stop();
    await receiver?.close();
    await db?.drop();
  });

  const post = async (path: string, body: unknown) =>
    fetch(`${system.gatewayUrl}${path}`, {
      method: 'POST',
      headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  const news = async (symbol: string, marker: string) => {
    const res = await post('/api/products/news', { symbols: [symbol], data: { marker } });
    expect(res.status).toBe(202);
    return AsyncJobResponse.parse(await res.json()).job_id;
  };

  it('delivers the delivery in flight and every event of the downtime after a restart', async () => {
    const hook = WebhookCreated.parse(await (await post('/api/webhooks/', { url: `${receiver.url}/hooks` })).json());
    const jobs = system.services.find((service) => service.name === 'jobs')!;
    const gateway = system.services.find((service) => service.name === 'gateway')!;

    // The first delivery is held open by the receiver: the dispatcher has it leased when the process dies.
    receiver.answer('hang');
    const inFlight = await news('AAPL', 'in-flight');
    const [held] = await receiver.waitFor(1, 60_000);
    jobs.child.kill('SIGKILL');
    await jobs.exited;

    const whileDown: string[] = [];
    for (let i = 0; i < JOBS_WHILE_DOWN; i++) whileDown.push(await news(['MSFT', 'NVDA', 'GOOGL'][i % 3] ?? 'MSFT', `down-${i}`));
    await system.restart(jobs, `${gateway.env.JOBS_URL}/readyz`);
    const expected = [inFlight, ...whileDown];
    await receiver.waitFor(expected.length + 1, 120_000, (delivery) => delivery.path === '/hooks');
    await waitFor(
      () => {
        const seen = new Set(receiver.received.map((delivery) => WebhookEvent.parse(JSON.parse(delivery.body)).data.job_id));
        return expected.every((id) => seen.has(id));
      },
      { timeoutMs: 120_000, what: 'a delivery of every job' },
    );

    const problems: string[] = [];
    const byJob = new Map<string, ReceivedDelivery[]>();
    for (const delivery of receiver.received) {
      if (standardWebhooksProblem(hook.secret, delivery.headers, delivery.body) !== null)
        problems.push(`bad signature on ${delivery.body}`);
      const jobId = WebhookEvent.parse(JSON.parse(delivery.body)).data.job_id ?? '';
      byJob.set(jobId, [...(byJob.get(jobId) ?? []), delivery]);
    }
    // The held delivery was sent again after its lease ran out, as the same message.
    const again = byJob.get(inFlight) ?? [];
    if (again.length < 2) problems.push(`the delivery in flight was sent ${again.length} time(s)`);
    if (new Set(again.map((delivery) => delivery.headers['webhook-id'])).size !== 1) problems.push('the redelivery changed its webhook-id');
    if (held?.headers['webhook-id'] !== again[0]?.headers['webhook-id'])
      problems.push('the held request is not the delivery of the first job');
    const lost = expected.filter((id) => !byJob.has(id));
    for (const id of lost) problems.push(`no delivery for job ${id}`);
    // Each delivery is one message: at least once, and a repeat carries the id it had.
    for (const [id, deliveries] of byJob)
      if (new Set(deliveries.map((delivery) => delivery.headers['webhook-id'])).size !== 1)
        problems.push(`job ${id} got two different messages`);

    reportSurvival({
      scenario: 'webhook sender killed mid-delivery',
      n: expected.length,
      survived: expected.length - lost.length,
      lost: lost.length,
      unit: 'webhook deliveries',
      details: { requests: receiver.received.length, repeats: receiver.received.length - byJob.size },
      problems,
    });
  }, 300_000);
});
