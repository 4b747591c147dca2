// Fakes of what we do not own, faked at the wire so the real clients run against them (docs/testing.md). The
// Messages API's wire format, its request helpers and the sample market dataset are offline mode's own
// (@fin/offline), re-exported here so that a test finds everything it scripts with in one place.
export {
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
  type ContentScript,
  type MessagesRequestBody,
  type RequestContentBlock,
  type RequestMessage,
} from '@fin/offline';
export { startFakeAnthropic, type FakeAnthropic, type FakeAnthropicOptions } from './anthropic/server';
export { citation, errorReply, hangingReply, jsonReply, message, textReply, toolUseReply, webSearch } from './anthropic/replies';
export {
  type Faults,
  type HandlerContext,
  type MessageReply,
  type RecordedRequest,
  type Reply,
  type ReplyHandler,
} from './anthropic/types';
export { startFakeFinnhub, type FakeFinnhub } from './finnhub/server';
export { startFakeEdgar, type FakeEdgar } from './edgar/server';
