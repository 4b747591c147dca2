// `@fin/ai/offline`: what offline mode is made of — the analyst, the in-process Messages API and its wire format,
// the bundled sample market data — for the test fakes (@fin/fakes), which serve the same wire format and data
// over HTTP, and for tests. Services need none of it: createAiEngine switches offline mode on by itself.
export { OFFLINE_NOTICE, offlineAnalyst } from './analyst';
export { messagesApiFetch } from './fetch';
export { apiId, opaque } from './ids';
export { lastUserText, outputSchema, systemText, toolNames, toolResults, type ToolResultView } from './request';
export { text, toolUse } from './turns';
export { checkHeaders, checkMessagesBody, parseBody, requestApiKey, type Rejection } from './validation';
export { errorBody, estimateInputTokens, renderEvents, renderMessage, resolveReply, serializeEvent, type RenderOptions } from './wire';
export {
  API_ERROR_STATUS,
  type ApiErrorType,
  type AssistantReply,
  type ContentScript,
  type MessagesRequestBody,
  type ModelCallContext,
  type ModelRequest,
  type RequestContentBlock,
  type RequestMessage,
  type ServerToolUseScript,
  type StandInModel,
  type StopReason,
  type TextScript,
  type ToolUseScript,
  type UsageOverride,
  type WebSearchCitation,
  type WebSearchErrorCode,
  type WebSearchResult,
  type WebSearchToolResultScript,
} from './wire-types';
export { SAMPLE_MARKET_DATA } from '../market-data/sample-data';
export {
  type FinnhubMetrics,
  type FinnhubNewsItem,
  type FinnhubProfile,
  type FinnhubQuote,
  type FinnhubSeriesPoint,
  type SampleMarketData,
  type SampleSymbolData,
} from '../market-data/sample-data-types';
