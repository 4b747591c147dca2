// Fakes of what we do not own, faked at the wire so the real clients run against them (docs/testing.md).
export { startFakeAnthropic, type FakeAnthropic, type FakeAnthropicOptions } from './anthropic/server';
export {
  citation,
  errorReply,
  hangingReply,
  jsonReply,
  message,
  text,
  textReply,
  toolUse,
  toolUseReply,
  webSearch,
} from './anthropic/replies';
export { lastUserText, outputSchema, systemText, toolNames, toolResults, type ToolResultView } from './anthropic/request-helpers';
export {
  API_ERROR_STATUS,
  type ApiErrorType,
  type ContentScript,
  type ErrorReply,
  type Faults,
  type HandlerContext,
  type MessageReply,
  type MessagesRequestBody,
  type RecordedRequest,
  type Reply,
  type ReplyHandler,
  type RequestContentBlock,
  type RequestMessage,
  type ScriptedReply,
  type StopReason,
  type UsageOverride,
  type WebSearchCitation,
  type WebSearchErrorCode,
  type WebSearchResult,
} from './anthropic/types';
export { startFakeFinnhub, type FakeFinnhub, type FakeFinnhubOptions, type FinnhubFault, type FinnhubRecordedRequest } from './finnhub/server';
export { SAMPLE_MARKET_DATA } from './finnhub/sample-data';
export {
  type FinnhubMetrics,
  type FinnhubNewsItem,
  type FinnhubProfile,
  type FinnhubQuote,
  type FinnhubSeriesPoint,
  type SampleMarketData,
  type SampleSymbolData,
} from './finnhub/types';
