// Real resources of a tenant, made through the public API: a completed job of every job type (the news job with a
// callback_url, so a callback delivery), a customer tool, a conversation and a webhook endpoint with a delivery. The fuzz suite aims some of its requests at them; the access matrix checks who can see them.
import {
  ChatResponse,
  CustomerTool,
  JobStatusResponse,
  JobType,
  WebhookCreated,
  WebhookDelivery,
  WebhookDeliveryListResponse,
  type JobType as JobTypeName,
} from '@fin/contracts';
import { waitFor } from '@fin/testing';

export interface TenantResources {
  jobs: Record<JobTypeName, string>;
  toolId: string;
  conversationId: string;
  /** A disabled webhook endpoint (so its delivery stays queued and is never in flight) and a delivery of it. */
  webhookId: string;
  webhookDeliveryId: string;
  /** The delivery to the news job's callback_url. */
  callbackDeliveryId: string;
  /** Strings that only this tenant's resources contain: another tenant must never see them. */
  markers: string[];
}

/** The body of a JSON answer, failing with the status and text when it is not the expected status. */
async function expectJson(response: Response, statuses: readonly number[], what: string): Promise<unknown> {
  const text = await response.text();
  if (!statuses.includes(response.status))
    throw new Error(`${what}: expected ${statuses.join(' or ')}, got ${response.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as unknown;
}

/** Makes the resources with `key`; `tag` (letters) makes their contents unique to the tenant. */
export async function createResources(url: string, key: string, tag: string): Promise<TenantResources> {
  const headers = { 'X-API-Key': key, 'Content-Type': 'application/json' };
  const post = (path: string, body: unknown, extra: Record<string, string> = {}) =>
    fetch(`${url}${path}`, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify(body) });
  const marker = `${tag}-private-${Math.random().toString(36).slice(2, 10)}`;

  // Custom data makes the cache entries the tenant's own (never shared with another tenant).
  await expectJson(await post('/api/webhooks/callback-secret', {}), [200], 'POST /api/webhooks/callback-secret');
  const bodies: Record<JobTypeName, unknown> = {
    news: { symbols: ['AAPL'], n: 2, data: { note: marker }, callback_url: `https://hooks.example.com/${tag}/callback/${marker}` },
    'stock-report': { symbols: ['MSFT'], data: { note: marker } },
    analysis: { prompt: `Summarise the exposure of portfolio ${marker}.`, symbols: ['AAPL'] },
  };
  const jobs = {} as Record<JobTypeName, string>;
  for (const jobType of JobType.options) {
    const path = jobType === 'analysis' ? '/api/analysis' : `/api/products/${jobType}`;
    const answer = (await expectJson(await post(path, bodies[jobType], { 'Cache-Control': 'no-cache' }), [200, 202], `POST ${path}`)) as {
      job_id: string;
    };
    jobs[jobType] = answer.job_id;
    await waitFor(
      async () => {
        const status = JobStatusResponse.parse(
          await expectJson(await fetch(`${url}/api/jobs/${jobType}/${jobs[jobType]}/status`, { headers }), [200], 'job status'),
        );
        if (status.status === 'failed') throw new Error(`the ${jobType} job failed: ${JSON.stringify(status.error)}`);
        return status.status === 'completed';
      },
      { timeoutMs: 60_000, what: `the ${jobType} job to complete` },
    );
  }

  const tool = CustomerTool.parse(
    await expectJson(
      await post('/api/customer-tools/', {
        name: `tool_${tag}`,
        description: `Positions of ${marker}.`,
        endpoint: `https://api.example.com/${tag}/positions`,
        input_schema: { type: 'object', properties: { account: { type: 'string' } } },
        headers: { Authorization: `Bearer ${marker}-secret` },
      }),
      [201],
      'POST /api/customer-tools/',
    ),
  );
  const chat = ChatResponse.parse(
    await expectJson(await post('/api/chat', { message: `What about ${marker}?`, stream: false }), [200], 'POST /api/chat'),
  );
  const webhook = WebhookCreated.parse(
    await expectJson(
      await post('/api/webhooks/', { url: `https://hooks.example.com/${tag}`, description: `Hooks of ${marker}.`, enabled: false }),
      [201],
      'POST /api/webhooks/',
    ),
  );
  const delivery = WebhookDelivery.parse(await expectJson(await post(`/api/webhooks/${webhook.id}/test`, {}), [202], 'POST test event'));
  const callback = await waitFor(
    async () =>
      WebhookDeliveryListResponse.parse(
        await expectJson(
          await fetch(`${url}/api/webhooks/callbacks/deliveries?job_id=${jobs.news}`, { headers }),
          [200],
          'GET /api/webhooks/callbacks/deliveries',
        ),
      ).deliveries[0],
    { timeoutMs: 30_000, what: "the news job's callback delivery" },
  );
  return {
    jobs,
    toolId: tool.id,
    conversationId: chat.conversation_id,
    webhookId: webhook.id,
    webhookDeliveryId: delivery.id,
    callbackDeliveryId: callback.id,
    markers: [marker, tool.id, chat.conversation_id, webhook.id, delivery.id, callback.id, ...Object.values(jobs)],
  };
}
