// /api/webhooks: endpoints a tenant registers to be told when its jobs finish, instead of polling. Deliveries
// follow the Standard Webhooks scheme (standardwebhooks.com): `webhook-id`, `webhook-timestamp` and
// `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` under the endpoint's `whsec_` secret.
import { z } from 'zod';
import { JobStatusUrl, JobResultUrl, JobType } from './common';
import { UNSTORABLE_TEXT_MESSAGE, dedupe, fieldError, isStorableText, quote, requestObject, uuid } from './internal';
import { JobUsage } from './usage';

export const WEBHOOK_URL_MAX = 2048;
export const WEBHOOK_DESCRIPTION_MAX = 256;
/** Endpoints per tenant. */
export const WEBHOOKS_MAX_PER_TENANT = 20;
export const WEBHOOK_DELIVERIES_DEFAULT_LIMIT = 50;
export const WEBHOOK_DELIVERIES_MAX_LIMIT = 200;
/** An endpoint whose every attempt fails for this many days is disabled (as the large webhook providers do). */
export const WEBHOOK_FAILING_DISABLE_DAYS = 3;
/** How much of a receiver's answer a recorded attempt keeps (characters). */
export const WEBHOOK_RESPONSE_EXCERPT_MAX = 1024;

/** The events an endpoint can subscribe to: a job's terminal states. */
export const WebhookEventType = z
  .enum(['job.completed', 'job.failed'], {
    error: fieldError((input) => `must be job.completed or job.failed, got ${quote(input)}`),
  })
  .meta({
    id: 'WebhookEventType',
    description: 'job.completed: a job finished with its result; job.failed: a job failed and will not complete.',
  });
export type WebhookEventType = z.infer<typeof WebhookEventType>;

function hasCredentials(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.username !== '' || parsed.password !== '';
  } catch {
    return false; // not a URL at all: the format check has reported it
  }
}

/** Whether an http:// URL names a receiver on this machine (`localhost`, 127.0.0.0/8, [::1]). */
function isLocalHttp(url: string): boolean {
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:') return false;
    const host = parsed.hostname.toLowerCase().replace(/\.$/, '');
    return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  } catch {
    return false;
  }
}

/**
 * Where deliveries go: an absolute https URL without credentials. Whether its host is a public address is checked
 * when a delivery is sent (DNS can change), and at registration for an IP literal. An http:// URL to this machine
 * passes the contract, and the service accepts it only in development with WEBHOOK_ALLOW_LOCAL_HTTP (400 otherwise).
 */
export const WebhookUrl = z
  .url({ protocol: /^https?$/, error: fieldError('must be an absolute https:// URL') })
  .max(WEBHOOK_URL_MAX, `must be at most ${WEBHOOK_URL_MAX} characters`)
  .regex(/^https?:\/\//i, 'must be an absolute https:// URL')
  .refine((url) => /^https:/i.test(url) || isLocalHttp(url), 'must be an absolute https:// URL')
  .refine((url) => !hasCredentials(url), 'must not contain a user name or password')
  .refine(isStorableText, UNSTORABLE_TEXT_MESSAGE)
  .meta({
    id: 'WebhookUrl',
    description: `Absolute https:// URL that receives the deliveries, at most ${WEBHOOK_URL_MAX} characters, no credentials; public internet addresses only. (A development system started with WEBHOOK_ALLOW_LOCAL_HTTP=true also accepts http://localhost, http://127.0.0.1 and http://[::1] receivers.)`,
    examples: ['https://hooks.example.com/fin'],
  });

/** `callback_url` of a product request: a one-off delivery of that job's terminal event. */
export const CallbackUrl = WebhookUrl.optional().meta({
  id: 'CallbackUrl',
  description:
    "Optional https URL told once when this request's job finishes (a `job.completed` or `job.failed` delivery, signed with the account's callback secret, retried for 24 h). Not called for an answer served from the cache (200), which already holds the result. Not part of the job: requests sharing a job each get their own callback.",
  examples: ['https://hooks.example.com/fin/jobs'],
});

const webhookFields = {
  url: WebhookUrl,
  events: z
    .array(WebhookEventType, { error: fieldError('must be an array of event types') })
    .overwrite(dedupe)
    .min(1, 'must list at least one event type')
    .default(() => [...WebhookEventType.options])
    .meta({ description: 'Which events are delivered; default both. Repeats are ignored.' }),
  description: z
    .string({ error: fieldError('must be a string') })
    .trim()
    .max(WEBHOOK_DESCRIPTION_MAX, `must be at most ${WEBHOOK_DESCRIPTION_MAX} characters`)
    .refine(isStorableText, UNSTORABLE_TEXT_MESSAGE)
    .default('')
    .meta({ description: 'A note for yourself, e.g. which system listens there.' }),
  enabled: z.boolean({ error: 'must be true or false' }).default(true).meta({
    description:
      'A disabled endpoint is sent nothing: no new events are queued for it, and deliveries already queued (tests, redeliveries, retries) wait until it is enabled again, within their 24 hours.',
  }),
};

export const WebhookCreateRequest = requestObject(webhookFields).meta({
  id: 'WebhookCreateRequest',
  description: 'Registers an endpoint. Omitted optional fields take their defaults.',
  examples: [{ url: 'https://hooks.example.com/fin', events: ['job.completed', 'job.failed'], description: 'order pipeline' }],
});
export type WebhookCreateRequest = z.infer<typeof WebhookCreateRequest>;

export const WebhookUpdateRequest = requestObject(webhookFields).meta({
  id: 'WebhookUpdateRequest',
  description: 'Replaces an endpoint: omitted optional fields take their defaults. The signing secret is kept (rotate it separately).',
  examples: [{ url: 'https://hooks.example.com/fin', events: ['job.failed'], enabled: false }],
});
export type WebhookUpdateRequest = z.infer<typeof WebhookUpdateRequest>;

export const WebhookPathParams = z
  .object({ id: uuid() })
  .meta({ id: 'WebhookPathParams', description: 'Path parameter {id} of /api/webhooks/{id}.' });
export type WebhookPathParams = z.infer<typeof WebhookPathParams>;

export const WebhookDeliveryPathParams = z
  .object({ id: uuid(), delivery_id: uuid() })
  .meta({ id: 'WebhookDeliveryPathParams', description: 'Path parameters of /api/webhooks/{id}/deliveries/{delivery_id}.' });
export type WebhookDeliveryPathParams = z.infer<typeof WebhookDeliveryPathParams>;

export const CallbackDeliveryPathParams = z
  .object({ delivery_id: uuid() })
  .meta({ id: 'CallbackDeliveryPathParams', description: 'Path parameters of /api/webhooks/callbacks/deliveries/{delivery_id}.' });
export type CallbackDeliveryPathParams = z.infer<typeof CallbackDeliveryPathParams>;

export const Webhook = z
  .object({
    id: z.uuid(),
    url: z.string(),
    events: z.array(WebhookEventType),
    description: z.string(),
    enabled: z.boolean(),
    products: z.array(JobType).meta({
      description:
        'The products whose job events this endpoint receives: those the API key that registered (or last replaced) it may read, by its scopes. A job of another product is not delivered here; `webhook.test` always is. Register with a key holding every product scope to receive them all.',
    }),
    failing_since: z.iso
      .datetime({ offset: true })
      .nullable()
      .meta({
        description: `When the attempts to it began to fail (the first failure since its last 2xx answer); null while it answers. An endpoint whose every attempt fails for ${WEBHOOK_FAILING_DISABLE_DAYS} days is disabled.`,
      }),
    disabled_at: z.iso.datetime({ offset: true }).nullable().meta({ description: 'When it was disabled; null while enabled.' }),
    disabled_reason: z
      .string()
      .nullable()
      .meta({
        description: `Why it is disabled: \`Disabled by the account.\` (enabled set to false), or the service's reason (every attempt failed for ${WEBHOOK_FAILING_DISABLE_DAYS} days). Null while enabled. Enabling it again clears this and sends what waited.`,
      }),
    created_at: z.iso.datetime({ offset: true }),
    updated_at: z.iso.datetime({ offset: true }),
  })
  .meta({ id: 'Webhook', description: 'A registered webhook endpoint. Its signing secret is never returned again after creation.' });
export type Webhook = z.infer<typeof Webhook>;

const WebhookSecret = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/)
  .meta({
    description:
      'The signing secret, shown only in this answer: `whsec_` and the base64 of 32 random bytes. Verify each delivery with it (Standard Webhooks).',
    examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Cm+hW3nSFk='],
  });

export const WebhookCreated = Webhook.extend({ secret: WebhookSecret }).meta({
  id: 'WebhookCreated',
  description: 'The new endpoint and its signing secret, which is shown this once.',
});
export type WebhookCreated = z.infer<typeof WebhookCreated>;

export const WebhookSecretRotated = z
  .object({
    secret: WebhookSecret,
    previous_secret_expires_at: z.iso.datetime({ offset: true }).meta({
      description: 'Until then every delivery is signed with both the new and the previous secret (two signatures in webhook-signature).',
    }),
  })
  .meta({ id: 'WebhookSecretRotated', description: 'The new signing secret, shown this once.' });
export type WebhookSecretRotated = z.infer<typeof WebhookSecretRotated>;

export const WebhookListResponse = z
  .object({ webhooks: z.array(Webhook) })
  .meta({ id: 'WebhookListResponse', description: "The account's endpoints, oldest first." });
export type WebhookListResponse = z.infer<typeof WebhookListResponse>;

export const WebhookAttemptOutcome = z
  .enum(['ok', 'http_error', 'blocked_address', 'redirect_refused', 'timeout', 'connection_failed', 'invalid_endpoint'])
  .meta({
    id: 'WebhookAttemptOutcome',
    description:
      'ok: a 2xx answer (delivered); http_error: any other status; blocked_address: the URL resolved to a non-public address and was not contacted; redirect_refused: a 3xx answer (redirects are not followed); timeout; connection_failed: DNS, TCP or TLS failure; invalid_endpoint.',
  });
export type WebhookAttemptOutcome = z.infer<typeof WebhookAttemptOutcome>;

export const WebhookAttempt = z
  .object({
    attempted_at: z.iso.datetime({ offset: true }),
    outcome: WebhookAttemptOutcome,
    http_status: z.int().nullable().meta({ description: 'Status the receiver answered with; null when it was not reached.' }),
    duration_ms: z.int(),
    error: z.string().nullable().meta({ description: 'Why the attempt did not succeed, when it did not.' }),
    response_excerpt: z
      .string()
      .nullable()
      .meta({ description: `The first ${WEBHOOK_RESPONSE_EXCERPT_MAX} characters of the receiver's answer, when it sent one.` }),
  })
  .meta({ id: 'WebhookAttempt', description: 'One attempt to deliver an event.' });
export type WebhookAttempt = z.infer<typeof WebhookAttempt>;

export const WebhookDeliveryStatus = z.enum(['pending', 'succeeded', 'failed']).meta({
  id: 'WebhookDeliveryStatus',
  description: 'pending: not delivered yet, retried at next_attempt_at; succeeded: a 2xx answer; failed: no 2xx within 24 hours.',
});

export const WebhookDelivery = z
  .object({
    id: z.uuid().meta({ description: 'The delivery, sent as `webhook-id`: the same on every attempt, so receivers can drop repeats.' }),
    webhook_id: z.uuid().nullable().meta({ description: 'The endpoint it is sent to; null for a delivery to a `callback_url`.' }),
    callback_url: z
      .string()
      .nullable()
      .meta({ description: "The product request's `callback_url` it is sent to; null for an endpoint's delivery." }),
    event_type: z.enum(['job.completed', 'job.failed', 'webhook.test']),
    job_id: z.uuid().nullable(),
    job_type: JobType.nullable(),
    status: WebhookDeliveryStatus,
    attempt_count: z.int(),
    next_attempt_at: z.iso
      .datetime({ offset: true })
      .nullable()
      .meta({ description: 'When the next attempt is due; null once it succeeded or failed.' }),
    created_at: z.iso.datetime({ offset: true }),
    attempts: z.array(WebhookAttempt).meta({ description: 'Every attempt, newest first.' }),
  })
  .meta({
    id: 'WebhookDelivery',
    description: 'One event sent (or being sent) to an endpoint or to a `callback_url`, with every attempt.',
  });
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const WebhookDeliveriesQuery = z
  .object({
    limit: z.coerce
      .number({ error: 'must be an integer' })
      .int('must be an integer')
      .min(1, 'must be at least 1')
      .max(WEBHOOK_DELIVERIES_MAX_LIMIT, `must be at most ${WEBHOOK_DELIVERIES_MAX_LIMIT}`)
      .default(WEBHOOK_DELIVERIES_DEFAULT_LIMIT)
      .meta({
        description: `How many of the most recent deliveries to return (1-${WEBHOOK_DELIVERIES_MAX_LIMIT}, default ${WEBHOOK_DELIVERIES_DEFAULT_LIMIT}).`,
      }),
  })
  .meta({ id: 'WebhookDeliveriesQuery', description: 'Query parameters of GET /api/webhooks/{id}/deliveries.' });
export type WebhookDeliveriesQuery = z.infer<typeof WebhookDeliveriesQuery>;

export const CallbackDeliveriesQuery = WebhookDeliveriesQuery.extend({
  job_id: uuid()
    .optional()
    .meta({ description: "Only this job's callback deliveries; another account's job is not found, as one that does not exist." }),
}).meta({ id: 'CallbackDeliveriesQuery', description: 'Query parameters of GET /api/webhooks/callbacks/deliveries.' });
export type CallbackDeliveriesQuery = z.infer<typeof CallbackDeliveriesQuery>;

export const WebhookDeliveryListResponse = z.object({ deliveries: z.array(WebhookDelivery) }).meta({
  id: 'WebhookDeliveryListResponse',
  description: "The endpoint's (or the account's callback) most recent deliveries, newest first.",
});
export type WebhookDeliveryListResponse = z.infer<typeof WebhookDeliveryListResponse>;

/** The body of every delivery: what a receiver parses. */
export const WebhookEvent = z
  .object({
    type: z.enum(['job.completed', 'job.failed', 'webhook.test']),
    timestamp: z.iso
      .datetime({ offset: true })
      .meta({ description: 'When the job reached this state (for webhook.test: when it was sent).' }),
    data: z.object({
      job_id: z.uuid().nullable(),
      job_type: JobType.nullable(),
      status: z.enum(['completed', 'failed']).nullable(),
      status_url: JobStatusUrl.nullable(),
      result_url: JobResultUrl.nullable(),
      result: z
        .record(z.string(), z.unknown())
        .optional()
        .meta({ description: 'job.completed: the result, when its JSON is at most 64 KiB (otherwise read result_url).' }),
      error: z.object({ type: z.string(), detail: z.string() }).optional().meta({ description: 'job.failed: why.' }),
      usage: JobUsage.optional().meta({
        description:
          "job.completed and job.failed: what the job's attempts cost (the completed result's `meta.usage`; for a failed job, every attempt's).",
      }),
    }),
  })
  .meta({ id: 'WebhookEvent', description: 'The JSON body of a delivery, signed as Standard Webhooks describes.' });
export type WebhookEvent = z.infer<typeof WebhookEvent>;
