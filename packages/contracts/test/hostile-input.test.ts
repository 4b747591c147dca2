// Inputs the fuzz suite (e2e/test/abuse/fuzz.test.ts) found answered with 500: values nested deep enough to overflow
// the stack where they were printed or serialised, and text Postgres cannot store. Each is now a 400 naming the field.
import {
  AnalysisRequest,
  ChatRequest,
  ChatStreamQuery,
  CustomerToolCreateRequest,
  JobPathParams,
  NewsRequest,
  StockReportRequest,
} from '../src';
import { UUID, ok, rejected } from './helpers';

/** An array nested `depth` levels deep: [[[…]]]. */
function nested(depth: number): unknown {
  let value: unknown = [];
  for (let level = 1; level < depth; level++) value = [value];
  return value;
}

/** An object nested `depth` levels deep: {"a":{"a":…}}. */
function nestedObject(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let level = 1; level < depth; level++) value = { a: value };
  return value;
}

const tool = {
  name: 'get_positions',
  description: 'Positions of a client account.',
  endpoint: 'https://api.example.com/positions',
  input_schema: { type: 'object' },
};

describe('hostile input is a validation error, never an exception', () => {
  it('names an array or object where a scalar belongs instead of printing it, however deep it is', () => {
    const deep = nested(100_000);
    expect(rejected(ChatRequest, { message: 'hi', conversation_id: deep })).toBe(
      'conversation_id: must be a UUID such as 3fa85f64-5717-4562-b3fc-2c963f66afa6, got an array',
    );
    expect(rejected(ChatStreamQuery, { conversation_id: deep })).toMatch(/^conversation_id: must be a UUID .*, got an array$/);
    expect(rejected(JobPathParams, { job_type: deep, job_id: { a: 1 } })).toBe(
      'job_type: must be one of news, stock-report, analysis, got an array; job_id: must be a UUID such as 3fa85f64-5717-4562-b3fc-2c963f66afa6, got an object',
    );
    expect(rejected(CustomerToolCreateRequest, { ...tool, method: deep })).toBe('method: must be GET or POST, got an array');
    expect(rejected(CustomerToolCreateRequest, { ...tool, products: [deep] })).toBe(
      'products[0]: must be one of news, stock-report, analysis, chat, got an array',
    );
    // Scalars are still quoted as before.
    expect(rejected(CustomerToolCreateRequest, { ...tool, method: 5 })).toBe('method: must be GET or POST, got "5"');
  });

  it('refuses custom data and tool input schemas nested more than 64 levels deep (they would overflow later steps)', () => {
    ok(NewsRequest, { symbols: ['AAPL'], data: nestedObject(64) });
    expect(rejected(NewsRequest, { symbols: ['AAPL'], data: nestedObject(65) })).toBe('data: must be nested at most 64 levels deep');
    expect(rejected(StockReportRequest, { symbols: ['AAPL'], data: { a: nested(10_000) } })).toBe(
      'data: must be nested at most 64 levels deep',
    );
    expect(rejected(AnalysisRequest, { prompt: 'p', data: { a: nested(100_000) } })).toContain(
      'data: must be nested at most 64 levels deep',
    );
    ok(CustomerToolCreateRequest, { ...tool, input_schema: { type: 'object', properties: { a: nestedObject(60) } } });
    expect(rejected(CustomerToolCreateRequest, { ...tool, input_schema: { type: 'object', properties: { a: nestedObject(70) } } })).toBe(
      'input_schema: must be nested at most 64 levels deep',
    );
  });

  it('refuses the NUL character and unpaired surrogates in stored text, naming where they are', () => {
    const message = 'must not contain the NUL character or unpaired surrogates';
    expect(rejected(ChatRequest, { message: 'AAPL\u0000' })).toBe(`message: ${message}`);
    expect(rejected(ChatRequest, { message: '\ud83d\ud83d' })).toBe(`message: ${message}`);
    expect(rejected(ChatRequest, { message: 'a\udfffb' })).toBe(`message: ${message}`);
    expect(rejected(ChatStreamQuery, { message: 'a\u0000' })).toBe(`message: ${message}`);
    expect(rejected(AnalysisRequest, { prompt: '\u0000\u0000' })).toBe(`prompt: ${message}`);
    expect(rejected(CustomerToolCreateRequest, { ...tool, description: 'x\u0000' })).toBe(`description: ${message}`);
    expect(rejected(CustomerToolCreateRequest, { ...tool, endpoint: 'https://api.example.com/a\u0000' })).toBe(`endpoint: ${message}`);
    expect(rejected(NewsRequest, { symbols: ['AAPL'], data: { notes: [{ text: 'a\u0000' }] } })).toBe(`data.notes[0].text: ${message}`);
    expect(rejected(NewsRequest, { symbols: ['AAPL'], data: { 'key\u0000': 1 } })).toBe(`data: ${message}`);
    expect(rejected(CustomerToolCreateRequest, { ...tool, input_schema: { type: 'object', description: '\ud800' } })).toBe(
      `input_schema.description: ${message}`,
    );
  });

  it('keeps accepting text with paired surrogates (emoji), other control characters and every script', () => {
    expect(ok(ChatRequest, { message: 'Apple 🍎 vs 𝔐𝔖𝔉𝔗 — 日本語 \t ok' }).message).toBe('Apple 🍎 vs 𝔐𝔖𝔉𝔗 — 日本語 \t ok');
    ok(AnalysisRequest, { prompt: 'Risk of 👩‍👩‍👧‍👦 portfolios', data: { '📈': ['\u0007 bell', '\u001b escape'] } });
    ok(ChatRequest, { message: 'hi', conversation_id: UUID });
  });
});
