// @fin/offline: what offline mode is made of — the analyst, the in-process Messages API (a `fetch` for the Anthropic
// SDK) and its wire format, the bundled sample market data. @fin/ai runs on it when no API key is set; the test
// fakes (@fin/fakes) serve the same wire format and data over HTTP. A package of its own so that both depend on it
// and neither on the other at run time.
export { OFFLINE_NOTICE, offlineAnalyst, textSentiment } from './analyst';
export { messagesApiFetch, type MessagesApiOptions } from './fetch';
export { apiId } from './ids';
export { briefText, lastUserText, outputSchema, systemText, toolNames, toolResults } from './request';
export { text, toolUse } from './turns';
export { checkHeaders, checkMessagesBody, parseBody, requestApiKey, type Rejection } from './validation';
export { API_MODELS, apiModel, minimumCacheableTokens } from './model-rules';
export { canonicalModel, createPacer, DEFAULT_MODEL_PACE, eventSchedule, type PaceOptions } from './pace';
export { createRateLimiter, type RateLimitOptions } from './rate-limits';
export { PromptCache, type BilledInput } from './prompt-cache';
export { countTokens, WEB_SEARCH_RESULT_TOKENS } from './tokens';
export {
  errorBody,
  estimateInputTokens,
  renderEvents,
  renderMessage,
  resolveReply,
  serializeEvent,
  type RenderOptions,
  type ResolvedReply,
} from './wire';
export {
  API_ERROR_STATUS,
  type ApiErrorType,
  type AssistantReply,
  type ContentScript,
  type MessagesRequestBody,
  type RequestContentBlock,
  type RequestMessage,
  type ServerToolUseScript,
  type StandInModel,
  type WebSearchCitation,
  type WebSearchErrorCode,
  type WebSearchResult,
  type WebSearchToolResultScript,
} from './wire-types';
export { SAMPLE_MARKET_DATA } from './sample-data';
export { type FinnhubMetrics, type FinnhubNewsItem, type SampleMarketData, type SampleSymbolData } from './sample-data-types';
export { sampleEdgarData } from './edgar/sample';
export { type SampleEdgarData } from './edgar/wire-types';
