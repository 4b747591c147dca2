export { aiConfigShape, isOffline, OfflineModeConflictError, type AiConfig } from './config';
export { createAiEngine, type AiEngine, type EngineOptions, type EngineOutcome } from './engine';
export { modelBudgetFromConfig, type ModelBudget } from './model-budget';
export { AiError, toAiError, type AiErrorKind } from './errors';
export { clampScore, GroundingSet, normaliseUrl } from './grounding';
export { runToolLoop, UNTRUSTED_DATA_RULE, type EngineEvent, type LoopCaps, type LoopParams, type LoopResult } from './loop';
export {
  modelProfile,
  priceTier,
  requestSettings,
  type RequestSettings,
  type ResolvedProfile,
  type ThinkingSetting,
} from './model-settings';
export { MODELS, type ModelProfile } from './models';
export { addUsage, NO_USAGE, totalInputTokens, type Usage } from './usage';
export { FinnhubProvider, MarketDataError, SampleMarketDataProvider, UnknownSymbolError, type MarketDataProvider } from './market-data';
export { marketDataTool } from './market-data-tool';
export { OFFLINE_NOTICE, offlineAnalyst } from '@fin/offline';
export { CHAT_NODES, schemaForFields, type ChatInput, type ChatTurn, type ProductOutcome, type RunContext } from './products';
export { billedCost, DEFAULT_PRICES, priceOf, uncachedInputCost, type BilledCost, type PriceTable } from './prices';
export { loadPrompt, type Prompt } from './prompts';
export { streamOf, type StreamItem } from './stream';
export { generateStructured, outputFormatFor, type StructuredResult } from './structured';
export {
  defineTool,
  noCustomerTools,
  type CustomerToolSource,
  type OfferedTools,
  type ToolContext,
  type ToolDefinition,
  type ToolOutput,
  type ToolProduct,
  type ToolRunOwner,
} from './tools';
