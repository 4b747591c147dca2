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

// A developer receiving webhooks on a laptop: WEBHOOK_ALLOW_LOCAL_HTTP=true (documented in docs/products.md) and a
// plain http receiver on 127.0.0.1, with no certificate and no test switch; the banner says the flag is on.
describe('local webhooks on npm start (WEBHOOK_ALLOW_LOCAL_HTTP)', () => {
  const data = dataFolder('fin-standalone-local-webhooks');
  let running: Launched | undefined;
  let receiver: FakeReceiver;
  beforeAll(async () => {
    receiver = await startFakeReceiver({ plainHttp: true });
    await buildOnce();
  }, 300_000);
  afterAll(async () => {
    await running?.forceStop();
    await receiver?.close();
    data.remove();
  });

  it('states the flag in the banner and delivers to an http://127.0.0.1 endpoint and callback_url', async () => {
    const started = await startNpmStart(data.dir, { WEBHOOK_ALLOW_LOCAL_HTTP: 'true' });
    running = started.running;
    expect(running.output()).toContain('Local webhooks: ON (WEBHOOK_ALLOW_LOCAL_HTTP)');
    const { apiKey, baseUrl } = started;
    const post = async (route: string, body: unknown) =>
      fetch(`${baseUrl}${route}`, {
        method: 'POST',
        headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect(receiver.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    // Only this machine: http to anywhere else is still a 400 naming the field.
    const elsewhere = await post('/api/webhooks/', { url: 'http://hooks.example.com/fin' });
    expect(elsewhere.status).toBe(400);
    expect(((await elsewhere.json()) as { detail: string }).detail).toContain('url');

    const created = await post('/api/webhooks/', { url: `${receiver.url}/hooks`, events: ['job.completed'] });
    expect(created.status).toBe(201);
    const hook = WebhookCreated.parse(await created.json());
    const callbackSecret = WebhookSecretRotated.parse(await (await post('/api/webhooks/callback-secret', {})).json());
    const accepted = await post('/api/products/news', { symbols: ['NVDA'], n: 2, callback_url: `${receiver.url}/callback` });
    expect(accepted.status).toBe(202);
    const job = AsyncJobResponse.parse(await accepted.json());

    const [toEndpoint] = await receiver.waitFor(1, 60_000, (delivery) => delivery.path === '/hooks');
    expect(standardWebhooksProblem(hook.secret, toEndpoint?.headers ?? {}, toEndpoint?.body ?? '')).toBeNull();
    expect(WebhookEvent.parse(JSON.parse(toEndpoint?.body ?? '')).data).toMatchObject({ job_id: job.job_id, status: 'completed' });
    const [toCallback] = await receiver.waitFor(1, 60_000, (delivery) => delivery.path === '/callback');
    expect(standardWebhooksProblem(callbackSecret.secret, toCallback?.headers ?? {}, toCallback?.body ?? '')).toBeNull();
  }, 180_000);
});
