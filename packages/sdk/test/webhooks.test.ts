// verifyWebhook against deliveries signed by the service's own signing code (@fin/webhooks), and a contract check
// that the SDK's WebhookEvent is the contracts' WebhookEvent.
import type { WebhookEvent as ContractWebhookEvent } from '@fin/contracts';
import { newSigningSecret, signedHeaders } from '@fin/webhooks';
import { WebhookVerificationError, verifyWebhook, type WebhookEvent } from '../src';

// Compile-time: each type is assignable to the other, so they cannot drift apart.
const fromContract = (event: ContractWebhookEvent): WebhookEvent => event;
const toContract = (event: WebhookEvent): ContractWebhookEvent => event;

const JOB = '3fa85f64-5717-4562-b3fc-2c963f66afa6';
const event: ContractWebhookEvent = {
  type: 'job.completed',
  timestamp: '2026-11-24T12:00:00.000Z',
  data: {
    job_id: JOB,
    job_type: 'news',
    status: 'completed',
    status_url: `/api/jobs/news/${JOB}/status`,
    result_url: `/api/jobs/news/${JOB}/result`,
    result: { news: [{ title: 'Überraschung ✓' }] },
  },
};
const body = JSON.stringify(event);
const now = new Date('2026-11-24T12:00:05Z');
const seconds = Math.floor(now.getTime() / 1000);

describe('verifyWebhook', () => {
  it('accepts a delivery signed by the service, from a Headers object or Node-style headers, as a string or bytes', async () => {
    const secret = newSigningSecret();
    const headers = signedHeaders([secret], 'msg_1', seconds, body);
    await expect(verifyWebhook(body, new Headers(headers), secret, { now })).resolves.toEqual(fromContract(event));
    await expect(verifyWebhook(new TextEncoder().encode(body), { ...headers, 'x-other': ['a', 'b'] }, secret, { now })).resolves.toEqual(
      toContract(fromContract(event)),
    );
  });

  it('accepts either signature while a rotated secret is honoured, and either of your secrets while you roll over', async () => {
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    const headers = signedHeaders([current, previous], 'msg_2', seconds, body);
    await expect(verifyWebhook(body, headers, previous, { now })).resolves.toMatchObject({ type: 'job.completed' });
    await expect(
      verifyWebhook(body, signedHeaders([previous], 'msg_2', seconds, body), [current, previous], { now }),
    ).resolves.toMatchObject({
      type: 'job.completed',
    });
  });

  it('refuses another secret, a changed body, id or timestamp, a stale timestamp and missing headers', async () => {
    const secret = newSigningSecret();
    const headers = signedHeaders([secret], 'msg_3', seconds, body);
    const refused = (promise: Promise<unknown>) => expect(promise).rejects.toBeInstanceOf(WebhookVerificationError);
    await refused(verifyWebhook(body, headers, newSigningSecret(), { now }));
    await refused(verifyWebhook(body.replace('Überraschung', 'Surprise'), headers, secret, { now }));
    await refused(verifyWebhook(body, { ...headers, 'webhook-id': 'msg_4' }, secret, { now }));
    await refused(verifyWebhook(body, { ...headers, 'webhook-timestamp': String(seconds + 1) }, secret, { now }));
    await refused(verifyWebhook(body, headers, secret, { now: new Date(now.getTime() + 301_000) }));
    await refused(verifyWebhook(body, { 'webhook-id': 'msg_3', 'webhook-timestamp': String(seconds) }, secret, { now }));
    await refused(verifyWebhook(body, { ...headers, 'webhook-signature': 'v1,not-base64!' }, secret, { now }));
  });
});
