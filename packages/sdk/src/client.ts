// The client: one object per area of the API (news, stockReport, analysis, chat, jobs, customerTools, meta),
// each method one route. Product requests return a JobHandle: awaiting it gives the API's answer (200 with the
// result, or 202 with the job URLs); its result() gives the result either way, following the job when it runs.
import { type APIResponse, type ClientOptions, type HttpRequest, type RequestOptions, Transport, newIdempotencyKey } from './core';
import { APIError, JobFailedError } from './errors';
import { type WaitOptions, jobEvents, jobPath, waitForJob } from './jobs';
import { AnalysisStream, ChatStream, JOB_LOCATION, type JobEventStream, McpStream } from './streams';
import type {
  AnalysisCompletedResponse,
  AnalysisPendingResponse,
  AnalysisRequest,
  AnalysisResult,
  AsyncJobResponse,
  ChatRequest,
  ChatResponse,
  ChatStreamQuery,
  CustomerTool,
  CustomerToolCallListResponse,
  CustomerToolCallsQuery,
  CustomerToolCreateRequest,
  CustomerToolListResponse,
  CustomerToolUpdateRequest,
  FilingListResponse,
  FilingResponse,
  FilingSectionResponse,
  FilingsQuery,
  JobResultByType,
  JobResultResponseByType,
  JobStatusResponse,
  JobType,
  McpMessage,
  NewsRequest,
  NewsResponse,
  NewsResult,
  OperationId,
  StockReportRequest,
  StockReportResponse,
  StockReportResult,
  Webhook,
  WebhookCreateRequest,
  WebhookCreated,
  CallbackDeliveriesQuery,
  WebhookDeliveriesQuery,
  WebhookDelivery,
  WebhookDeliveryListResponse,
  WebhookListResponse,
  WebhookSecretRotated,
  WebhookUpdateRequest,
} from './types';

/** Options of a product request (POST /api/products/…, POST /api/analysis). */
export interface ProductRequestOptions extends RequestOptions {
  /**
   * Makes the POST safe to retry: the same key and body return the same job. The SDK sends a fresh one with every
   * product request unless given one, so its own retries never start a second job.
   */
  idempotencyKey?: string;
}

/** Options of the cached products (news, stock report). */
export interface CachedProductRequestOptions extends ProductRequestOptions {
  /** `no-cache` skips the 7-day cache and starts a fresh run. */
  cacheControl?: 'no-cache' | 'no-store';
}

/** Options of a chat stream. */
export interface ChatStreamOptions extends RequestOptions {
  /** Re-attachments (GET /api/chat/stream with Last-Event-ID) in a row after a dropped connection; default maxRetries of the client. */
  maxReconnects?: number;
}

/** The answer to a product request: 200 with the (cached or inline) result, or 202 with the job URLs. */
export type ProductResponse<Completed, Pending = AsyncJobResponse> =
  (APIResponse<Completed> & { status: 200 }) | (APIResponse<Pending> & { status: 202; location: string | undefined });

/**
 * A product request in flight (sent at once). `await handle` gives the answer's body; `handle.response` the
 * answer with status and headers; `handle.result()` the result, following the job when the answer was 202.
 */
export class JobHandle<
  Completed extends { job_id: string },
  Result,
  Pending extends { job_id: string } = AsyncJobResponse,
> implements PromiseLike<Completed | Pending> {
  /** The API's answer (rejects with the request's error). */
  readonly response: Promise<ProductResponse<Completed, Pending>>;

  constructor(
    private readonly transport: Transport,
    private readonly jobType: JobType,
    request: HttpRequest,
    private readonly resultOf: (completed: Completed) => Result,
  ) {
    this.response = transport.json<Completed | Pending>(request).then((answer) => {
      if (answer.status === 202) {
        return { ...(answer as APIResponse<Pending>), status: 202 as const, location: answer.headers.get('location') ?? undefined };
      }
      return { ...(answer as APIResponse<Completed>), status: 200 as const };
    });
    this.response.catch(() => undefined);
  }

  // PromiseLike: `await client.news.create(…)` is the answer's body.
  then<A = Completed | Pending, B = never>(
    onfulfilled?: ((value: Completed | Pending) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.response.then((answer) => answer.data).then(onfulfilled, onrejected);
  }

  /** The job id (from either answer). */
  async jobId(): Promise<string> {
    return (await this.response).data.job_id;
  }

  /**
   * The result: at once for a 200, otherwise when the job completes (JobFailedError when it fails), following the
   * job's event stream (or, where that is not available, polling its status about every 2 s).
   */
  async result(options: WaitOptions = {}): Promise<Result> {
    const answer = await this.response.catch((error: unknown) => {
      // A job that failed while the API waited for it (POST /api/analysis) is answered with its error and Location:
      // the job's failure, thrown as such.
      const job = error instanceof APIError ? JOB_LOCATION.exec(error.headers.get('location') ?? '') : null;
      if (error instanceof APIError && job?.[1] === this.jobType && job[2] !== undefined) {
        throw new JobFailedError(this.jobType, job[2], { type: error.type, detail: error.detail });
      }
      throw error;
    });
    if (answer.status === 200) return this.resultOf(answer.data);
    const result = await waitForJob(this.transport, this.jobType, answer.data.job_id, options);
    return result as Result;
  }
}

function productHeaders(options: CachedProductRequestOptions): Record<string, string> {
  return {
    ...options.headers,
    'Idempotency-Key': options.idempotencyKey ?? newIdempotencyKey(),
    ...(options.cacheControl !== undefined ? { 'Cache-Control': options.cacheControl } : {}),
  };
}

function webhookPath(id: string): string {
  return `/api/webhooks/${encodeURIComponent(id)}`;
}

function requestOptions(options: RequestOptions): RequestOptions {
  const { signal, timeoutMs, maxRetries, headers } = options;
  return { signal, timeoutMs, maxRetries, headers };
}

/** A cached response without its envelope (job_id, status, from_cache): the job's result. */
function withoutEnvelope<C extends { job_id: string; status: string; from_cache: boolean }>(
  response: C,
): Omit<C, 'job_id' | 'status' | 'from_cache'> {
  const { job_id: _jobId, status: _status, from_cache: _fromCache, ...result } = response;
  return result;
}

export class FinancialIntelligence {
  /** The transport the methods share (base URL, key, retries). */
  private readonly transport: Transport;

  constructor(options: ClientOptions) {
    this.transport = new Transport(options);
  }

  /** POST /api/products/news: relevant news for 1 to 10 symbols. */
  readonly news = {
    create: (body: NewsRequest, options: CachedProductRequestOptions = {}): JobHandle<NewsResponse, NewsResult> =>
      new JobHandle<NewsResponse, NewsResult>(
        this.transport,
        'news',
        { ...requestOptions(options), method: 'POST', path: '/api/products/news', body, headers: productHeaders(options) },
        (completed) => withoutEnvelope(completed),
      ),
  };

  /** POST /api/products/stock-report: equity analysis of one symbol, or a comparison of two. */
  readonly stockReport = {
    create: (body: StockReportRequest, options: CachedProductRequestOptions = {}): JobHandle<StockReportResponse, StockReportResult> =>
      new JobHandle<StockReportResponse, StockReportResult>(
        this.transport,
        'stock-report',
        { ...requestOptions(options), method: 'POST', path: '/api/products/stock-report', body, headers: productHeaders(options) },
        (completed) => withoutEnvelope(completed),
      ),
  };

  /** POST /api/analysis: a free-form prompt, answered in one call, as a job, or as a stream. */
  readonly analysis = {
    /** Non-streamed: 200 with the result when the job completed within the API's wait, else 202. */
    create: (
      body: AnalysisRequest,
      options: ProductRequestOptions = {},
    ): JobHandle<AnalysisCompletedResponse, AnalysisResult, AnalysisPendingResponse> => {
      const request: AnalysisRequest = { ...body, output_format: { ...body.output_format, stream: false } };
      return new JobHandle<AnalysisCompletedResponse, AnalysisResult, AnalysisPendingResponse>(
        this.transport,
        'analysis',
        { ...requestOptions(options), method: 'POST', path: '/api/analysis', body: request, headers: productHeaders(options) },
        (completed) => completed.result,
      );
    },
    /** Streamed (output_format.stream true): synthesis_chunk events, then done; the job's URL in Location. */
    stream: (body: AnalysisRequest, options: ProductRequestOptions = {}): AnalysisStream => {
      const request: AnalysisRequest = { ...body, output_format: { ...body.output_format, stream: true } };
      return new AnalysisStream(this.transport, {
        ...requestOptions(options),
        method: 'POST',
        path: '/api/analysis',
        body: request,
        headers: productHeaders(options),
      });
    },
  };

  /** Research conversations: POST /api/chat and GET /api/chat/stream. */
  readonly chat = {
    /** Sends a message and streams the reply (re-attaching with Last-Event-ID if the connection drops). */
    stream: (body: Omit<ChatRequest, 'stream'>, options: ChatStreamOptions = {}): ChatStream =>
      new ChatStream(
        this.transport,
        { ...requestOptions(options), method: 'POST', path: '/api/chat', body: { ...body, stream: true } },
        body.conversation_id ?? undefined,
        options.maxReconnects ?? this.transport.maxRetries,
      ),
    /** Sends a message and returns the whole reply as one JSON body (stream false). */
    send: async (body: Omit<ChatRequest, 'stream'>, options: RequestOptions = {}): Promise<ChatResponse> =>
      (
        await this.transport.json<ChatResponse>({
          ...requestOptions(options),
          method: 'POST',
          path: '/api/chat',
          body: { ...body, stream: false },
        })
      ).data,
    /**
     * GET /api/chat/stream: with `message`, sends a turn (the EventSource route); with `lastEventId`, re-attaches
     * to that reply and replays what followed; with conversation_id alone, streams its latest reply.
     */
    attach: (query: ChatStreamQuery & { lastEventId?: string }, options: ChatStreamOptions = {}): ChatStream => {
      const { lastEventId, ...params } = query;
      return new ChatStream(
        this.transport,
        {
          ...requestOptions(options),
          method: 'GET',
          path: '/api/chat/stream',
          query: params,
          headers: { ...options.headers, ...(lastEventId !== undefined ? { 'Last-Event-ID': lastEventId } : {}) },
        },
        params.conversation_id,
        options.maxReconnects ?? this.transport.maxRetries,
      );
    },
  };

  /** Jobs of the products: status, result, and waiting for the end. */
  readonly jobs = {
    /** GET /api/jobs/{job_type}/{job_id}/status. */
    status: async (jobType: JobType, jobId: string, options: RequestOptions = {}): Promise<JobStatusResponse> =>
      (await this.transport.json<JobStatusResponse>({ ...requestOptions(options), method: 'GET', path: jobPath(jobType, jobId, 'status') }))
        .data,
    /** GET /api/jobs/{job_type}/{job_id}/result (409 ConflictError before the job completed). */
    result: async <T extends JobType>(jobType: T, jobId: string, options: RequestOptions = {}): Promise<JobResultResponseByType[T]> =>
      (
        await this.transport.json<JobResultResponseByType[T]>({
          ...requestOptions(options),
          method: 'GET',
          path: jobPath(jobType, jobId, 'result'),
        })
      ).data,
    /**
     * GET /api/jobs/{job_type}/{job_id}/events: status, progress, then result (a failed job throws
     * JobFailedError). `lastEventId` resumes after that event.
     */
    events: (jobType: JobType, jobId: string, options: RequestOptions & { lastEventId?: string } = {}): JobEventStream =>
      jobEvents(this.transport, jobType, jobId, { ...requestOptions(options), lastEventId: options.lastEventId }),
    /** Waits for the job (following its event stream, else polling): its result, or JobFailedError. */
    wait: <T extends JobType>(jobType: T, jobId: string, options: WaitOptions = {}): Promise<JobResultByType[T]> =>
      waitForJob(this.transport, jobType, jobId, options),
  };

  /**
   * US companies' SEC filings (the `filings` scope): a company's filings, one filing's sections, one section's text.
   * A symbol SEC EDGAR does not know lists no filings (`company` null and a `note`), it is not an error.
   */
  readonly filings = {
    /** GET /api/filings: the company's filings, newest first, optionally only some forms and since a date. */
    list: async (query: FilingsQuery, options: RequestOptions = {}): Promise<FilingListResponse> =>
      (await this.transport.json<FilingListResponse>({ ...requestOptions(options), method: 'GET', path: '/api/filings', query })).data,
    /** GET /api/filings/{accession}: the filing and its sections (items and titles, not their text). */
    get: async (symbol: string, accession: string, options: RequestOptions = {}): Promise<FilingResponse> =>
      (
        await this.transport.json<FilingResponse>({
          ...requestOptions(options),
          method: 'GET',
          path: `/api/filings/${encodeURIComponent(accession)}`,
          query: { symbol },
        })
      ).data,
    /** GET /api/filings/{accession}/sections/{item}: one section's text (Item 1A risk factors, 7 MD&A, an 8-K's 2.02). */
    section: async (symbol: string, accession: string, item: string, options: RequestOptions = {}): Promise<FilingSectionResponse> =>
      (
        await this.transport.json<FilingSectionResponse>({
          ...requestOptions(options),
          method: 'GET',
          path: `/api/filings/${encodeURIComponent(accession)}/sections/${encodeURIComponent(item)}`,
          query: { symbol },
        })
      ).data,
  };

  /** The tenant's external data APIs the AI may call: /api/customer-tools/. */
  readonly customerTools = {
    list: async (options: RequestOptions = {}): Promise<CustomerToolListResponse> =>
      (await this.transport.json<CustomerToolListResponse>({ ...requestOptions(options), method: 'GET', path: '/api/customer-tools/' }))
        .data,
    create: async (body: CustomerToolCreateRequest, options: RequestOptions = {}): Promise<CustomerTool> =>
      (await this.transport.json<CustomerTool>({ ...requestOptions(options), method: 'POST', path: '/api/customer-tools/', body })).data,
    get: async (id: string, options: RequestOptions = {}): Promise<CustomerTool> =>
      (
        await this.transport.json<CustomerTool>({
          ...requestOptions(options),
          method: 'GET',
          path: `/api/customer-tools/${encodeURIComponent(id)}`,
        })
      ).data,
    update: async (id: string, body: CustomerToolUpdateRequest, options: RequestOptions = {}): Promise<CustomerTool> =>
      (
        await this.transport.json<CustomerTool>({
          ...requestOptions(options),
          method: 'PUT',
          path: `/api/customer-tools/${encodeURIComponent(id)}`,
          body,
        })
      ).data,
    delete: async (id: string, options: RequestOptions = {}): Promise<void> => {
      await this.transport.json<undefined>({
        ...requestOptions(options),
        method: 'DELETE',
        path: `/api/customer-tools/${encodeURIComponent(id)}`,
      });
    },
    /** The tool's most recent calls, newest first. */
    calls: async (id: string, query: CustomerToolCallsQuery = {}, options: RequestOptions = {}): Promise<CustomerToolCallListResponse> =>
      (
        await this.transport.json<CustomerToolCallListResponse>({
          ...requestOptions(options),
          method: 'GET',
          path: `/api/customer-tools/${encodeURIComponent(id)}/calls`,
          query,
        })
      ).data,
  };

  /** Webhooks on job completion: /api/webhooks/. */
  readonly webhooks = {
    list: async (options: RequestOptions = {}): Promise<WebhookListResponse> =>
      (await this.transport.json<WebhookListResponse>({ ...requestOptions(options), method: 'GET', path: '/api/webhooks/' })).data,
    /** Registers an endpoint; the answer's `secret` is shown only this once. */
    create: async (body: WebhookCreateRequest, options: RequestOptions = {}): Promise<WebhookCreated> =>
      (await this.transport.json<WebhookCreated>({ ...requestOptions(options), method: 'POST', path: '/api/webhooks/', body })).data,
    get: async (id: string, options: RequestOptions = {}): Promise<Webhook> =>
      (await this.transport.json<Webhook>({ ...requestOptions(options), method: 'GET', path: webhookPath(id) })).data,
    update: async (id: string, body: WebhookUpdateRequest, options: RequestOptions = {}): Promise<Webhook> =>
      (await this.transport.json<Webhook>({ ...requestOptions(options), method: 'PUT', path: webhookPath(id), body })).data,
    delete: async (id: string, options: RequestOptions = {}): Promise<void> => {
      await this.transport.json<undefined>({ ...requestOptions(options), method: 'DELETE', path: webhookPath(id) });
    },
    /** A new signing secret for the endpoint, shown this once. */
    rotateSecret: async (id: string, options: RequestOptions = {}): Promise<WebhookSecretRotated> =>
      (
        await this.transport.json<WebhookSecretRotated>({
          ...requestOptions(options),
          method: 'POST',
          path: `${webhookPath(id)}/rotate-secret`,
        })
      ).data,
    /** Queues a test delivery to the endpoint. */
    test: async (id: string, options: RequestOptions = {}): Promise<WebhookDelivery> =>
      (await this.transport.json<WebhookDelivery>({ ...requestOptions(options), method: 'POST', path: `${webhookPath(id)}/test` })).data,
    /** The endpoint's deliveries, newest first, with every attempt. */
    deliveries: async (
      id: string,
      query: WebhookDeliveriesQuery = {},
      options: RequestOptions = {},
    ): Promise<WebhookDeliveryListResponse> =>
      (
        await this.transport.json<WebhookDeliveryListResponse>({
          ...requestOptions(options),
          method: 'GET',
          path: `${webhookPath(id)}/deliveries`,
          query: query,
        })
      ).data,
    /** Sends a delivery again. */
    redeliver: async (id: string, deliveryId: string, options: RequestOptions = {}): Promise<WebhookDelivery> =>
      (
        await this.transport.json<WebhookDelivery>({
          ...requestOptions(options),
          method: 'POST',
          path: `${webhookPath(id)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`,
        })
      ).data,
    /** The account's deliveries to `callback_url`s, newest first, with every attempt; `job_id` keeps one job's. */
    callbackDeliveries: async (query: CallbackDeliveriesQuery = {}, options: RequestOptions = {}): Promise<WebhookDeliveryListResponse> =>
      (
        await this.transport.json<WebhookDeliveryListResponse>({
          ...requestOptions(options),
          method: 'GET',
          path: '/api/webhooks/callbacks/deliveries',
          query: query,
        })
      ).data,
    /** Sends a callback delivery again. */
    redeliverCallback: async (deliveryId: string, options: RequestOptions = {}): Promise<WebhookDelivery> =>
      (
        await this.transport.json<WebhookDelivery>({
          ...requestOptions(options),
          method: 'POST',
          path: `/api/webhooks/callbacks/deliveries/${encodeURIComponent(deliveryId)}/redeliver`,
        })
      ).data,
    /** A new secret for the account's one-off `callback_url` deliveries, shown this once. */
    rotateCallbackSecret: async (options: RequestOptions = {}): Promise<WebhookSecretRotated> =>
      (
        await this.transport.json<WebhookSecretRotated>({
          ...requestOptions(options),
          method: 'POST',
          path: '/api/webhooks/callback-secret',
        })
      ).data,
  };

  /** The Model Context Protocol endpoint (/mcp), for code that speaks MCP itself; AI assistants use an MCP client. */
  readonly mcp = {
    /** POST /mcp: one JSON-RPC message; its answer's messages (none for a notification or a response: 202). */
    send: (message: McpMessage, options: RequestOptions = {}): McpStream =>
      new McpStream(this.transport, {
        ...requestOptions(options),
        method: 'POST',
        path: '/mcp',
        body: message,
        // The streamable HTTP transport asks clients to accept both answers.
        headers: { ...options.headers, Accept: 'application/json, text/event-stream' },
      }),
    // GET /mcp, the transport's optional server-initiated stream, is not offered (the server answers 405): no method.
  };

  /** The API's own description. */
  readonly meta = {
    /** GET /api/openapi.json: the OpenAPI 3.1 document. */
    openApiDocument: async (options: RequestOptions = {}): Promise<Record<string, unknown>> =>
      (await this.transport.json<Record<string, unknown>>({ ...requestOptions(options), method: 'GET', path: '/api/openapi.json' })).data,
    /** GET /docs: the API reference page's HTML. */
    docsPage: async (options: RequestOptions = {}): Promise<string> => {
      const { value } = await this.transport.send(
        { ...requestOptions(options), method: 'GET', path: '/docs', accept: 'html' },
        (response) => response.text(),
      );
      return value;
    },
  };
}

/**
 * Which client method serves each operation of the API (operationId → `area.method`). Its type makes the build
 * fail when the generated types gain an operation the client has no method for.
 */
export const OPERATION_METHODS = {
  createNews: 'news.create',
  createStockReport: 'stockReport.create',
  createAnalysis: 'analysis.create',
  chat: 'chat.stream',
  chatStream: 'chat.attach',
  getJobStatus: 'jobs.status',
  getJobResult: 'jobs.result',
  getJobEvents: 'jobs.events',
  listFilings: 'filings.list',
  getFiling: 'filings.get',
  getFilingSection: 'filings.section',
  listCustomerTools: 'customerTools.list',
  createCustomerTool: 'customerTools.create',
  getCustomerTool: 'customerTools.get',
  listCustomerToolCalls: 'customerTools.calls',
  updateCustomerTool: 'customerTools.update',
  deleteCustomerTool: 'customerTools.delete',
  listWebhooks: 'webhooks.list',
  createWebhook: 'webhooks.create',
  getWebhook: 'webhooks.get',
  updateWebhook: 'webhooks.update',
  deleteWebhook: 'webhooks.delete',
  rotateWebhookSecret: 'webhooks.rotateSecret',
  testWebhook: 'webhooks.test',
  listCallbackDeliveries: 'webhooks.callbackDeliveries',
  redeliverCallbackDelivery: 'webhooks.redeliverCallback',
  listWebhookDeliveries: 'webhooks.deliveries',
  redeliverWebhookDelivery: 'webhooks.redeliver',
  rotateCallbackSecret: 'webhooks.rotateCallbackSecret',
  mcp: 'mcp.send',
  getOpenApiDocument: 'meta.openApiDocument',
  getApiDocs: 'meta.docsPage',
} as const satisfies Record<OperationId, string>;
