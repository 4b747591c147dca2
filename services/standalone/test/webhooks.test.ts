// Webhooks in `npm start`'s single process (in-process bus): an endpoint registered through the gateway with the
// key the banner prints, a news job's terminal event delivered signed to an HTTPS receiver, and a request's
// callback_url told under the account's callback secret. The receiver is on 127.0.0.1, which the process may call
// only because of CUSTOMER_TOOLS_ALLOW_LOOPBACK (test configuration), trusting its certificate through
// NODE_EXTRA_CA_CERTS.
import { AsyncJobResponse, WebhookCreated, WebhookEvent, WebhookSecretRotated } from '@fin/contracts';
import { testCertificate } from '@fin/customer-tools/testing';
import { standardWebhooksProblem, startFakeReceiver, type FakeReceiver } from '@fin/webhooks/testing';
import { buildOnce, dataFolder, startNpmStart, type Launched } from './npm-start';

describe('webhooks on npm start', () => {
  const data = dataFolder('fin-standalone-webhooks');
  let running: Launched | undefined;
  let receiver: FakeReceiver;
  beforeAll(async () => {
    receiver = await startFakeReceiver();
    await buildOnce();
  }, 300_000);
  afterAll(async () => {
    await running?.forceStop();
    await receiver?.close();
    data.remove();
  });

  it('delivers a signed job.completed to an endpoint and to a callback_url', async () => {
    const started = await startNpmStart(data.dir, {
      CUSTOMER_TOOLS_ALLOW_LOOPBACK: 'true',
      NODE_EXTRA_CA_CERTS: (await testCertificate()).certFile,
    });
    running = started.running;
    const { apiKey, baseUrl } = started;
    const post = async (route: string, body: unknown) =>
      fetch(`${baseUrl}${route}`, {
        method: 'POST',
        headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });

    const created = await post('/api/webhooks/', { url: `${receiver.url}/hooks`, events: ['job.completed'] });
    expect(created.status).toBe(201);
    const hook = WebhookCreated.parse(await created.json());
    const callbackSecret = WebhookSecretRotated.parse(await (await post('/api/webhooks/callback-secret', {})).json());

    const accepted = await post('/api/products/news', { symbols: ['AMZN'], n: 2, callback_url: `${receiver.url}/callback` });
    expect(accepted.status).toBe(202);
    const job = AsyncJobResponse.parse(await accepted.json());

    const [toEndpoint] = await receiver.waitFor(1, 60_000, (delivery) => delivery.path === '/hooks');
    expect(standardWebhooksProblem(hook.secret, toEndpoint?.headers ?? {}, toEndpoint?.body ?? '')).toBeNull();
    expect(WebhookEvent.parse(JSON.parse(toEndpoint?.body ?? '')).data).toMatchObject({ job_id: job.job_id, status: 'completed' });
    const [toCallback] = await receiver.waitFor(1, 60_000, (delivery) => delivery.path === '/callback');
    expect(standardWebhooksProblem(callbackSecret.secret, toCallback?.headers ?? {}, toCallback?.body ?? '')).toBeNull();
    expect(WebhookEvent.parse(JSON.parse(toCallback?.body ?? '')).data.job_id).toBe(job.job_id);
  }, 180_000);
});
