// Fakes of what we do not own, faked at the wire so the real clients run against them (docs/testing.md). The
// Messages API's wire format, its request helpers and the sample market dataset are offline mode's own
// (@fin/offline), re-exported here so that a test finds everything it scripts with in one place.
export {
  API_ERROR_STATUS,
  briefText,
  countTokens,
  lastUserText,
  minimumCacheableTokens,
  WEB_SEARCH_RESULT_TOKENS,
  outputSchema,
  SAMPLE_MARKET_DATA,
  systemText,
  text,
  toolNames,
  toolResults,
  toolUse,
  type ApiErrorType,
  type ContentScript,
  type FinnhubMetrics,
  type FinnhubNewsItem,
  type FinnhubProfile,
  type FinnhubQuote,
  type FinnhubSeriesPoint,
  type MessagesRequestBody,
  type RequestContentBlock,
  type RequestMessage,
  type SampleMarketData,
  type SampleSymbolData,
  type StopReason,
  type ToolResultView,
  type UsageOverride,
  type WebSearchCitation,
  type WebSearchErrorCode,
  type WebSearchResult,
} from '@fin/offline';
export { startFakeAnthropic, type FakeAnthropic, type FakeAnthropicOptions } from './anthropic/server';
export { citation, errorReply, hangingReply, jsonReply, message, textReply, toolUseReply, webSearch } from './anthropic/replies';
export {
  type ErrorReply,
  type Faults,
  type HandlerContext,
  type MessageReply,
  type RecordedRequest,
  type Reply,
  type ReplyHandler,
  type ScriptedReply,
} from './anthropic/types';
export {
  startFakeFinnhub,
  type FakeFinnhub,
  type FakeFinnhubOptions,
  type FinnhubFault,
  type FinnhubRecordedRequest,
} from './finnhub/server';
