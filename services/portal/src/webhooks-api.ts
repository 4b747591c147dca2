// The webhooks API (/api/webhooks, scope `webhooks`, reached through the gateway). Handlers are short: the
// contract validates the input, the store does the work, its refusals become 400 / 409, and another tenant's
// endpoint or delivery is the same 404 as a missing one. An endpoint receives the products the key that registered
// (or replaced) it may read: its `products`, from the caller's scopes. Within the account a key acts within what it
// may read (its reach): deliveries of other products are not listed and are a 404 to redeliver, and changing,
// deleting, testing or rotating the secret of an endpoint that receives other products is a 403 naming them.
import { type WebhookDelivery, type WebhookDeliveryListResponse, type WebhookListResponse } from '@fin/contracts';
import { badRequest, conflict, forbidden, notFound, type Caller, type HandlerTable, type RouteContext } from '@fin/http';
import { WebhookError, productsReadableWith, type WebhookStore } from '@fin/webhooks';

const NOT_FOUND = 'No webhook endpoint with this id.';

function tenantOf(caller: Caller): string {
  // The gateway checked the scope; checked again so a wiring mistake there cannot open this API to other keys.
  if (!caller.scopes.includes('webhooks')) throw forbidden('This API key does not have the webhooks scope.');
  return caller.tenantId;
}

/** The products the caller may read: the bound of what it sees and changes here. */
const reachOf = (caller: Caller) => productsReadableWith(caller.scopes);

async function translated<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof WebhookError) {
      if (error.kind === 'conflict') throw conflict(error.detail);
      if (error.kind === 'forbidden') throw forbidden(error.detail);
      throw badRequest(error.detail);
    }
    throw error;
  }
}

function found<T>(value: T | null): T {
  if (value === null) throw notFound(NOT_FOUND);
  return value;
}

function redelivered(delivery: WebhookDelivery | 'in_flight' | null, res: RouteContext['res'], notFoundDetail: string): WebhookDelivery {
  if (delivery === null) throw notFound(notFoundDetail);
  if (delivery === 'in_flight') throw conflict('This delivery is being attempted right now; redeliver it once the attempt has ended.');
  res.status(202);
  return delivery;
}

export function webhooksHandlers({ webhooks }: { webhooks: WebhookStore }): HandlerTable {
  return {
    listWebhooks: async ({ caller }): Promise<WebhookListResponse> => ({
      webhooks: await webhooks.list(tenantOf(caller)),
    }),

    rotateCallbackSecret: async ({ caller }) => webhooks.rotateCallbackSecret(tenantOf(caller)),

    // Mounted before the {id} routes, so that express does not take `callbacks` for an endpoint id.
    listCallbackDeliveries: async ({ query, caller }): Promise<WebhookDeliveryListResponse> => {
      const deliveries = await webhooks.deliveries(tenantOf(caller), null, query.limit, reachOf(caller), query.job_id);
      // Null only for a job_id that is not one of the account's jobs.
      if (deliveries === null) throw notFound('No job with this id.');
      return { deliveries };
    },

    redeliverCallbackDelivery: async ({ params, caller }, { res }) =>
      redelivered(await webhooks.redeliver(tenantOf(caller), null, params.delivery_id, reachOf(caller)), res, 'No such callback delivery.'),

    createWebhook: async ({ body, caller }, { res }) => {
      const created = await translated(webhooks.create(tenantOf(caller), body, reachOf(caller)));
      res.status(201).location(`/api/webhooks/${created.id}`);
      return created;
    },

    getWebhook: async ({ params, caller }) => found(await webhooks.get(tenantOf(caller), params.id)),

    updateWebhook: async ({ params, body, caller }) =>
      found(await translated(webhooks.update(tenantOf(caller), params.id, body, reachOf(caller)))),

    deleteWebhook: async ({ params, caller }, { res }) => {
      if (!(await translated(webhooks.delete(tenantOf(caller), params.id, reachOf(caller))))) throw notFound(NOT_FOUND);
      res.status(204).end();
      return undefined;
    },

    rotateWebhookSecret: async ({ params, caller }) =>
      found(await translated(webhooks.rotateSecret(tenantOf(caller), params.id, reachOf(caller)))),

    testWebhook: async ({ params, caller }, { res }) => {
      const delivery = found(await translated(webhooks.queueTest(tenantOf(caller), params.id, reachOf(caller))));
      res.status(202);
      return delivery;
    },

    listWebhookDeliveries: async ({ params, query, caller }): Promise<WebhookDeliveryListResponse> => ({
      deliveries: found(await webhooks.deliveries(tenantOf(caller), params.id, query.limit, reachOf(caller))),
    }),

    redeliverWebhookDelivery: async ({ params, caller }, { res }) =>
      redelivered(
        await webhooks.redeliver(tenantOf(caller), params.id, params.delivery_id, reachOf(caller)),
        res,
        'No such delivery of this webhook endpoint.',
      ),
  };
}
