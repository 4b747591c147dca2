// Names for the generated types (src/generated/openapi.ts, made from the API's OpenAPI document): the request
// bodies, answers and event data of every route.
import type { components, operations, webhooks } from './generated/openapi';

export type { components, operations, paths, webhooks } from './generated/openapi';

type Schemas = components['schemas'];

/** The deliveries the API sends (the document's `webhooks`): operations of the receiver, not of the API. */
type WebhookOperation = NonNullable<webhooks[keyof webhooks]['post']>;

/** An operation of the API's routes (the document's `paths`), by its OpenAPI operationId. */
export type OperationId = { [Id in keyof operations]: operations[Id] extends WebhookOperation ? never : Id }[keyof operations];

export type ErrorBody = Schemas['ErrorBody'];
export type ErrorType = Schemas['ErrorType'];
export type JobType = Schemas['JobType'];
export type JobError = Schemas['JobError'];
export type JobStatusResponse = Schemas['JobStatusResponse'];
export type AsyncJobResponse = Schemas['AsyncJobResponse'];

export type NewsRequest = Schemas['NewsRequest'];
export type NewsResponse = Schemas['NewsResponse'];
export type NewsResult = Schemas['NewsResult'];
export type NewsJobResultResponse = Schemas['NewsJobResultResponse'];

export type StockReportRequest = Schemas['StockReportRequest'];
export type StockReportResponse = Schemas['StockReportResponse'];
export type StockReportResult = Schemas['StockReportResult'];
export type StockReportJobResultResponse = Schemas['StockReportJobResultResponse'];

export type AnalysisRequest = Schemas['AnalysisRequest'];
export type AnalysisResult = Schemas['AnalysisResult'];
export type AnalysisJobResultResponse = Schemas['AnalysisJobResultResponse'];
/** The 200 answer of a non-streamed POST /api/analysis that completed in time. */
export type AnalysisCompletedResponse = operations['createAnalysis']['responses']['200']['content']['application/json'];
/** The 202 answer of POST /api/analysis: not finished yet. */
export type AnalysisPendingResponse = operations['createAnalysis']['responses']['202']['content']['application/json'];
export type AnalysisSynthesisChunkEvent = Schemas['AnalysisSynthesisChunkEvent'];
export type AnalysisDoneEvent = Schemas['AnalysisDoneEvent'];

export type ChatRequest = Schemas['ChatRequest'];
export type ChatResponse = Schemas['ChatResponse'];
export type ChatStreamQuery = NonNullable<operations['chatStream']['parameters']['query']>;
export type ChatTokenEvent = Schemas['ChatTokenEvent'];
export type ChatNodeStartEvent = Schemas['ChatNodeStartEvent'];
export type ChatToolStartEvent = Schemas['ChatToolStartEvent'];
export type ChatToolEndEvent = Schemas['ChatToolEndEvent'];
export type ChatDoneEvent = Schemas['ChatDoneEvent'];

export type FilingsQuery = NonNullable<operations['listFilings']['parameters']['query']>;
export type FilingListResponse = Schemas['FilingListResponse'];
export type FilingResponse = Schemas['FilingResponse'];
export type FilingSectionResponse = Schemas['FilingSectionResponse'];
export type FilingSummary = Schemas['FilingSummary'];
export type FilingCompany = Schemas['FilingCompany'];

export type CustomerTool = Schemas['CustomerTool'];
export type CustomerToolCreateRequest = Schemas['CustomerToolCreateRequest'];
export type CustomerToolUpdateRequest = Schemas['CustomerToolUpdateRequest'];
export type CustomerToolListResponse = Schemas['CustomerToolListResponse'];
export type CustomerToolCall = Schemas['CustomerToolCall'];
export type CustomerToolCallListResponse = Schemas['CustomerToolCallListResponse'];
export type CustomerToolCallsQuery = NonNullable<operations['listCustomerToolCalls']['parameters']['query']>;

/** The `result` of a completed job, by job type. */
export interface JobResultByType {
  news: NewsResult;
  'stock-report': StockReportResult;
  analysis: AnalysisResult;
}

/** The answer of the result route, by job type. */
export interface JobResultResponseByType {
  news: NewsJobResultResponse;
  'stock-report': StockReportJobResultResponse;
  analysis: AnalysisJobResultResponse;
}

export type JobStatusEvent = Schemas['JobStatusEvent'];
export type JobProgressEvent = Schemas['JobProgressEvent'];
export type JobResultEvent = Schemas['JobResultEvent'];
export type JobErrorEvent = Schemas['JobErrorEvent'];

export type Citation = Schemas['Citation'];
export type CitedFiling = Schemas['CitedFiling'];
export type FinancialFigure = Schemas['FinancialFigure'];
export type FinancialRatio = Schemas['FinancialRatio'];

export type Webhook = Schemas['Webhook'];
export type WebhookCreateRequest = Schemas['WebhookCreateRequest'];
export type WebhookUpdateRequest = Schemas['WebhookUpdateRequest'];
export type WebhookCreated = Schemas['WebhookCreated'];
export type WebhookListResponse = Schemas['WebhookListResponse'];
export type WebhookSecretRotated = Schemas['WebhookSecretRotated'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type WebhookDeliveryListResponse = Schemas['WebhookDeliveryListResponse'];
export type WebhookDeliveriesQuery = NonNullable<operations['listWebhookDeliveries']['parameters']['query']>;
export type CallbackDeliveriesQuery = NonNullable<operations['listCallbackDeliveries']['parameters']['query']>;
export type WebhookEventType = Schemas['WebhookEventType'];
/** The JSON body of a webhook delivery (the document's `webhooks`). */
export type WebhookEvent = Schemas['WebhookEvent'];

/** A JSON-RPC 2.0 message of the Model Context Protocol endpoint (POST /mcp). */
export type McpMessage = Schemas['McpMessage'];
