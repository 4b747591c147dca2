// The portal's webhooks pages: register an endpoint (its signing secret shown once), list and delete endpoints,
// and per endpoint its deliveries with every attempt, a test event and redelivery. The same store as the API
// (@fin/webhooks); the signed-in key needs the webhooks scope, an endpoint registered here receives the products
// that key may read, and a test event or a redelivery counts against the account's `webhooks` limit, as through
// the API. As through the API, the key sees only the deliveries of the products it may read, and deleting or
// testing an endpoint that receives other products is refused (403, naming them).
import { PORTAL_PAGES, WebhookCreateRequest, type WebhookDelivery } from '@fin/contracts';
import { loggerOf, route, type RouteOptions } from '@fin/http';
import type { Logger } from '@fin/log';
import { WebhookError, productsReadableWith, type WebhookStore } from '@fin/webhooks';
import type express from 'express';
import type { Request, Response } from 'express';
import type { Account } from '../accounts';
import { html, problemList, type Html } from './html';
import type { Signed } from './signed';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface PageHelpers {
  webhooks: WebhookStore;
  logger: Logger;
  shell: (res: Response, title: string, body: Html, current: 'webhooks', status?: number) => void;
  signedIn: RouteOptions;
  signedOf: (res: Response) => Signed;
  /** Counts a delivery queued here against the account's `webhooks` limit; false once the 429 is sent. */
  withinWebhooksLimit: (req: Request, res: Response, account: Account) => Promise<boolean>;
}

const formValues = (value: string | string[] | undefined): string[] => (Array.isArray(value) ? value : value === undefined ? [] : [value]);
const formText = (value: string | string[] | undefined): string => (typeof value === 'string' ? value : '');

function deliveryRows(deliveries: readonly WebhookDelivery[], id: string, csrf: string): Html[] {
  return deliveries.map(
    (delivery) => html`<tr data-delivery="${delivery.id}">
  <td>${delivery.created_at.slice(0, 19).replace('T', ' ')}</td>
  <td>${delivery.event_type}${delivery.job_id === null ? '' : html`<div class="muted">${delivery.job_type} <code>${delivery.job_id}</code></div>`}</td>
  <td><span class="badge ${delivery.status === 'succeeded' ? 'on' : 'off'}">${delivery.status}</span>${delivery.next_attempt_at === null ? '' : html`<div class="muted">next attempt ${delivery.next_attempt_at.slice(0, 19).replace('T', ' ')}</div>`}</td>
  <td><ul class="attempts">${delivery.attempts.map(
    (attempt) =>
      html`<li>${attempt.attempted_at.slice(11, 19)} · ${attempt.outcome}${attempt.http_status === null ? '' : html` · HTTP ${String(attempt.http_status)}`} · ${String(attempt.duration_ms)} ms${attempt.error === null ? '' : html`<div class="muted">${attempt.error}</div>`}</li>`,
  )}</ul></td>
  <td><form method="post" action="/portal/webhooks/${id}/deliveries/${delivery.id}/redeliver" class="inline"><input type="hidden" name="csrf" value="${csrf}"><button type="submit" class="link">Redeliver</button></form></td>
</tr>`,
  );
}

export function mountWebhookPages(
  router: express.Router,
  { webhooks, logger, shell, signedIn, signedOf, withinWebhooksLimit }: PageHelpers,
): void {
  /** The account of a signed-in key with the webhooks scope; otherwise a page saying what is missing. */
  const accountOf = (res: Response): Signed | null => {
    const signed = signedOf(res);
    if (signed.account.scopes.includes('webhooks')) return signed;
    shell(
      res,
      'Webhooks',
      html`<p>This session's API key does not have the webhooks scope. Sign in with a key that has it (generate one under <a href="/portal/keys">API keys</a>).</p>`,
      'webhooks',
      403,
    );
    return null;
  };
  const notFound = (res: Response) =>
    shell(
      res,
      'Not found',
      html`<p>There is no such webhook endpoint in this account.</p><p><a href="/portal/webhooks">Back to your webhooks</a></p>`,
      'webhooks',
      404,
    );
  /** Runs a change of an endpoint; one beyond the key's reach gets a page saying which products it lacks. */
  const withinReach = async <T>(res: Response, work: Promise<T>): Promise<T | undefined> => {
    try {
      return await work;
    } catch (error) {
      if (!(error instanceof WebhookError) || error.kind !== 'forbidden') throw error;
      shell(res, 'Not allowed', html`<p>${error.detail}</p><p><a href="/portal/webhooks">Back to your webhooks</a></p>`, 'webhooks', 403);
      return undefined;
    }
  };

  const listPage = async (
    res: Response,
    signed: Signed,
    extra: {
      created?: { id: string; secret: string };
      problems?: string[];
      values?: { url: string; description: string; events: string[] };
    } = {},
  ) => {
    const { account, csrf } = signed;
    const endpoints = await webhooks.list(account.tenantId);
    const values = extra.values ?? { url: '', description: '', events: ['job.completed', 'job.failed'] };
    const rows = endpoints.map(
      (endpoint) => html`<tr data-webhook="${endpoint.id}">
  <td><a href="/portal/webhooks/${endpoint.id}"><code>${endpoint.url}</code></a>${endpoint.description === '' ? '' : html`<div class="muted">${endpoint.description}</div>`}</td>
  <td>${endpoint.events.join(', ')}</td>
  <td><span class="badge ${endpoint.enabled ? 'on' : 'off'}">${endpoint.enabled ? 'enabled' : 'disabled'}</span>${endpoint.disabled_reason === null ? '' : html`<div class="muted" data-disabled-reason>${endpoint.disabled_reason}</div>`}${endpoint.enabled && endpoint.failing_since !== null ? html`<div class="muted">failing since ${endpoint.failing_since.slice(0, 19).replace('T', ' ')}</div>` : ''}</td>
  <td>${endpoint.products.length === 0 ? html`<span class="muted">test events only</span>` : endpoint.products.join(', ')}</td>
  <td>${endpoint.created_at.slice(0, 10)}</td>
  <td><a href="/portal/webhooks/${endpoint.id}">Deliveries</a>
    <form method="post" action="/portal/webhooks/${endpoint.id}/delete" class="inline" data-confirm="Delete the endpoint ${endpoint.url}? Nothing more is sent to it."><input type="hidden" name="csrf" value="${csrf}"><button type="submit" class="link danger">Delete</button></form></td>
</tr>`,
    );
    const created = extra.created;
    shell(
      res,
      'Webhooks',
      html`${created === undefined ? '' : html`<section class="new-key" role="status"><h2>Your new signing secret</h2><p>Copy it now: it is shown only this once. Verify every delivery with it (Standard Webhooks: <code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>).</p><p><code id="new-secret">${created.secret}</code> <button type="button" data-copy="new-secret">Copy</button></p></section>`}
<p>Endpoints are told when a job of this account finishes: a signed JSON POST, retried with backoff for 24 hours until it answers 2xx. An endpoint receives the jobs of the products this session's key may read (${productsReadableWith(signed.account.scopes).join(', ') || 'none: test events only'}). One whose every attempt fails for 3 days is disabled, with the reason shown here.</p>
${problemList(extra.problems ?? [])}
<form method="post" action="/portal/webhooks" class="narrow">
  <input type="hidden" name="csrf" value="${csrf}">
  <label for="webhook_url">URL <small>https only, on the public internet</small></label>
  <input id="webhook_url" name="url" type="url" required maxlength="2048" value="${values.url}" autocomplete="off" ${extra.problems?.some((problem) => problem.startsWith('url')) === true ? html`aria-invalid="true"` : ''}>
  <label for="webhook_description">Description <small>optional</small></label>
  <input id="webhook_description" name="description" maxlength="256" value="${values.description}" autocomplete="off">
  <fieldset><legend>Events</legend>
  ${['job.completed', 'job.failed'].map((event) => html`<label class="check"><input type="checkbox" name="events" value="${event}" ${values.events.includes(event) ? html`checked` : ''}> ${event}</label>`)}
  </fieldset>
  <p><button type="submit">Add endpoint</button></p>
</form>
${endpoints.length === 0 ? html`<p class="empty">No endpoints yet.</p>` : html`<table><thead><tr><th>URL</th><th>Events</th><th>Status</th><th>Products</th><th>Created</th><th></th></tr></thead><tbody>${rows}</tbody></table>`}`,
      'webhooks',
    );
  };

  route(
    router,
    PORTAL_PAGES.webhooks,
    async (_input, { res }) => {
      const signed = accountOf(res);
      if (signed) await listPage(res, signed);
    },
    signedIn,
  );

  route(
    router,
    PORTAL_PAGES.createWebhook,
    async ({ body }, { res }) => {
      const signed = accountOf(res);
      if (!signed) return;
      const values = { url: formText(body.url).trim(), description: formText(body.description), events: formValues(body.events) };
      const parsed = WebhookCreateRequest.safeParse(values);
      if (!parsed.success) {
        const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'form'}: ${issue.message}`);
        await listPage(res, signed, { problems, values });
        return;
      }
      try {
        const created = await webhooks.create(signed.account.tenantId, parsed.data, productsReadableWith(signed.account.scopes));
        loggerOf(res, logger).info({ tenantId: signed.account.tenantId, webhookId: created.id }, 'webhook endpoint created in the portal');
        await listPage(res, signed, { created: { id: created.id, secret: created.secret } });
      } catch (error) {
        if (!(error instanceof WebhookError)) throw error;
        await listPage(res, signed, { problems: [error.detail], values });
      }
    },
    signedIn,
  );

  route(
    router,
    PORTAL_PAGES.webhookDeliveries,
    async ({ params }, { res }) => {
      const signed = accountOf(res);
      if (!signed) return;
      const endpoint = UUID.test(params.id) ? await webhooks.get(signed.account.tenantId, params.id) : null;
      const deliveries =
        endpoint === null
          ? null
          : await webhooks.deliveries(signed.account.tenantId, endpoint.id, 100, productsReadableWith(signed.account.scopes));
      if (endpoint === null || deliveries === null) {
        notFound(res);
        return;
      }
      shell(
        res,
        `Deliveries to ${endpoint.url}`,
        html`${endpoint.disabled_reason === null ? '' : html`<div class="problems" role="status" data-disabled-reason><p><strong>Disabled.</strong> ${endpoint.disabled_reason} Nothing is sent to it; its deliveries wait (enable it again with <code>PUT /api/webhooks/${endpoint.id}</code> and <code>"enabled": true</code>).</p></div>`}<p>Every event sent to this endpoint, newest first, with each attempt: when, the outcome, the HTTP status and the duration. A failed delivery is retried with backoff for 24 hours; <em>Redeliver</em> sends it again now.</p>
<form method="post" action="/portal/webhooks/${endpoint.id}/test" class="inline"><input type="hidden" name="csrf" value="${signed.csrf}"><button type="submit">Send a test event</button></form>
${deliveries.length === 0 ? html`<p class="empty">Nothing sent yet.</p>` : html`<table><thead><tr><th>Queued (UTC)</th><th>Event</th><th>Status</th><th>Attempts</th><th></th></tr></thead><tbody>${deliveryRows(deliveries, endpoint.id, signed.csrf)}</tbody></table>`}
<p><a href="/portal/webhooks">Back to your webhooks</a></p>`,
        'webhooks',
      );
    },
    signedIn,
  );

  route(
    router,
    PORTAL_PAGES.deleteWebhook,
    async ({ params }, { res }) => {
      const signed = accountOf(res);
      if (!signed) return;
      const deleted = UUID.test(params.id)
        ? await withinReach(res, webhooks.delete(signed.account.tenantId, params.id, productsReadableWith(signed.account.scopes)))
        : false;
      if (deleted === undefined) return;
      if (!deleted) {
        notFound(res);
        return;
      }
      loggerOf(res, logger).info({ tenantId: signed.account.tenantId, webhookId: params.id }, 'webhook endpoint deleted in the portal');
      res.redirect(303, '/portal/webhooks');
    },
    signedIn,
  );

  route(
    router,
    PORTAL_PAGES.testWebhook,
    async ({ params }, { req, res }) => {
      const signed = accountOf(res);
      if (!signed) return;
      if (!(await withinWebhooksLimit(req, res, signed.account))) return;
      const queued = UUID.test(params.id)
        ? await withinReach(res, webhooks.queueTest(signed.account.tenantId, params.id, productsReadableWith(signed.account.scopes)))
        : null;
      if (queued === undefined) return;
      if (queued === null) {
        notFound(res);
        return;
      }
      res.redirect(303, `/portal/webhooks/${params.id.toLowerCase()}`);
    },
    signedIn,
  );

  route(
    router,
    PORTAL_PAGES.redeliverWebhook,
    async ({ params }, { req, res }) => {
      const signed = accountOf(res);
      if (!signed) return;
      if (!(await withinWebhooksLimit(req, res, signed.account))) return;
      const outcome =
        UUID.test(params.id) && UUID.test(params.delivery_id)
          ? await webhooks.redeliver(signed.account.tenantId, params.id, params.delivery_id, productsReadableWith(signed.account.scopes))
          : null;
      if (outcome === null) {
        notFound(res);
        return;
      }
      // An attempt in flight is left to finish; the page shows its outcome either way.
      res.redirect(303, `/portal/webhooks/${params.id.toLowerCase()}`);
    },
    signedIn,
  );
}
