// @fin/contracts: every request, response, error body and SSE event of the public API, as zod schemas.
// Each schema and its type share one name; the OpenAPI document is generated from these objects.
export * from './errors';
export * from './common';
export * from './citations';
export * from './news';
export * from './stock-report';
export * from './filings';
export * from './analysis';
export * from './chat';
export * from './events';
export * from './jobs';
export * from './customer-tools';
export * from './mcp';
export * from './usage';
export * from './webhooks';
export * from './routes';
export * from './portal';
export * from './openapi';
