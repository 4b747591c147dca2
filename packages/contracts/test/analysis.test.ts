import {
  ANALYSIS_PROMPT_MAX,
  AnalysisRequest,
  AnalysisResponse,
  AnalysisResult,
  OUTPUT_SCHEMA_TYPE_NAMES,
  OutputFormat,
  PortfolioComposition,
  analysisText,
  jobUrls,
} from '../src';
import { UUID, ok, rejected, symbols } from './helpers';

describe('AnalysisRequest: prompt and symbols', () => {
  it('needs only a prompt and defaults the output format to non-streamed markdown', () => {
    expect(ok(AnalysisRequest, { prompt: '  Compare margins  ' })).toEqual({
      prompt: 'Compare margins',
      output_format: { type: 'markdown', stream: false },
    });
  });

  it('rejects a missing, empty or blank prompt', () => {
    expect(rejected(AnalysisRequest, {})).toBe('prompt: is required');
    expect(rejected(AnalysisRequest, { prompt: '' })).toBe('prompt: must not be empty');
    expect(rejected(AnalysisRequest, { prompt: ' \n\t ' })).toBe('prompt: must not be empty');
  });

  it('accepts the maximum prompt length (after trimming) and rejects one more', () => {
    expect(ANALYSIS_PROMPT_MAX).toBe(8000);
    ok(AnalysisRequest, { prompt: ` ${'x'.repeat(ANALYSIS_PROMPT_MAX)} ` });
    expect(rejected(AnalysisRequest, { prompt: 'x'.repeat(ANALYSIS_PROMPT_MAX + 1) })).toBe('prompt: must be at most 8000 characters');
  });

  it('accepts 0 to 10 normalised symbols and rejects 11', () => {
    expect(ok(AnalysisRequest, { prompt: 'p', symbols: [] }).symbols).toEqual([]);
    expect(ok(AnalysisRequest, { prompt: 'p', symbols: ['msft', 'MSFT', 'aapl'] }).symbols).toEqual(['MSFT', 'AAPL']);
    ok(AnalysisRequest, { prompt: 'p', symbols: symbols(10) });
    expect(rejected(AnalysisRequest, { prompt: 'p', symbols: symbols(11) })).toBe('symbols: expected at most 10 distinct symbols, got 11');
  });
});

describe('PortfolioComposition', () => {
  const holding = (symbol: string, percentage: number) => ({ symbol, percentage });

  it('accepts totals within ±1 of 100', () => {
    expect(ok(PortfolioComposition, [holding('aapl', 60), holding('msft', 40)])).toEqual([holding('AAPL', 60), holding('MSFT', 40)]);
    ok(PortfolioComposition, [holding('A', 33.33), holding('B', 33.33), holding('C', 33.33)]);
    ok(PortfolioComposition, [holding('A', 50), holding('B', 51)]);
    ok(PortfolioComposition, [holding('A', 50), holding('B', 49)]);
    ok(PortfolioComposition, [holding('A', 100), holding('B', 0)]);
  });

  it('rejects a total off by more than 1, stating the total', () => {
    expect(rejected(PortfolioComposition, [holding('A', 100), holding('B', 50)])).toBe('percentages must add up to 100 (±1), got 150');
    expect(rejected(PortfolioComposition, [holding('A', 50), holding('B', 48.9)])).toBe('percentages must add up to 100 (±1), got 98.9');
  });

  it('rejects negative percentages and percentages over 100', () => {
    expect(rejected(PortfolioComposition, [holding('A', -1), holding('B', 101)])).toBe(
      '[0].percentage: must not be negative; [1].percentage: must not be over 100',
    );
    expect(rejected(PortfolioComposition, [holding('A', 100.5)])).toBe('[0].percentage: must not be over 100');
  });

  it('rejects the same symbol twice, whatever its case', () => {
    expect(rejected(PortfolioComposition, [holding('AAPL', 50), holding(' aapl', 50)])).toBe(
      '[1].symbol: duplicate symbol "AAPL", already at position 0',
    );
  });

  it('accepts 50 holdings and rejects 51 or none', () => {
    const many = (count: number) => Array.from({ length: count }, (_, index) => holding(`S${index}`, 100 / count));
    ok(PortfolioComposition, many(50));
    expect(rejected(PortfolioComposition, many(51))).toBe('must list at most 50 holdings');
    expect(rejected(PortfolioComposition, [])).toBe('must list at least one holding when present');
  });

  it('rejects unknown fields and bad symbols in a holding', () => {
    expect(rejected(PortfolioComposition, [{ symbol: 'A', percentage: 100, weight: 1 }])).toBe(
      '[0]: unknown field "weight" (allowed: symbol, percentage)',
    );
    expect(rejected(PortfolioComposition, [holding('^GSPC', 100)])).toMatch(/^\[0\]\.symbol: "\^GSPC" is not a valid ticker symbol/);
  });

  it('is nested under portfolio_composition in the request', () => {
    expect(rejected(AnalysisRequest, { prompt: 'p', portfolio_composition: [holding('A', 100), holding('B', 50)] })).toBe(
      'portfolio_composition: percentages must add up to 100 (±1), got 150',
    );
  });
});

describe('OutputFormat', () => {
  it('defaults type to markdown and stream to false', () => {
    expect(ok(OutputFormat, {})).toEqual({ type: 'markdown', stream: false });
    expect(ok(OutputFormat, { type: 'json', stream: true })).toEqual({ type: 'json', stream: true });
  });

  it('requires schema with json_schema', () => {
    expect(rejected(AnalysisRequest, { prompt: 'p', output_format: { type: 'json_schema' } })).toBe(
      'output_format.schema: is required when type is json_schema',
    );
    expect(ok(OutputFormat, { type: 'json_schema', schema: { summary: 'string', score: 'number' } }).schema).toEqual({
      summary: 'string',
      score: 'number',
    });
  });

  it('rejects schema with any other type', () => {
    expect(rejected(OutputFormat, { type: 'markdown', schema: { a: 'string' } })).toBe(
      'schema: is only allowed when type is json_schema (type is markdown)',
    );
    expect(rejected(OutputFormat, { schema: { a: 'string' } })).toBe('schema: is only allowed when type is json_schema (type is markdown)');
    rejected(OutputFormat, { type: 'json', schema: { a: 'string' } });
  });

  it('accepts exactly the listed type names', () => {
    expect(OUTPUT_SCHEMA_TYPE_NAMES).toEqual(['string', 'number', 'integer', 'boolean', 'array', 'object']);
    const schema = Object.fromEntries(OUTPUT_SCHEMA_TYPE_NAMES.map((name) => [`f_${name}`, name]));
    expect(ok(OutputFormat, { type: 'json_schema', schema }).schema).toEqual(schema);
    expect(rejected(OutputFormat, { type: 'json_schema', schema: { ok: 'float' } })).toBe(
      'schema.ok: must be one of string, number, integer, boolean, array, object, got "float"',
    );
  });

  it('requires identifier field names', () => {
    ok(OutputFormat, { type: 'json_schema', schema: { _private: 'string', a1: 'string' } });
    expect(rejected(OutputFormat, { type: 'json_schema', schema: { 'bad name': 'string' } })).toBe(
      'schema["bad name"]: invalid name: must start with a letter or "_" and contain only letters, digits and "_" (at most 64 characters)',
    );
    rejected(OutputFormat, { type: 'json_schema', schema: { '1st': 'string' } });
    rejected(OutputFormat, { type: 'json_schema', schema: { ['a'.repeat(65)]: 'string' } });
  });

  it('requires 1 to 50 fields', () => {
    const fields = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`f${index}`, 'string']));
    ok(OutputFormat, { type: 'json_schema', schema: fields(1) });
    ok(OutputFormat, { type: 'json_schema', schema: fields(50) });
    expect(rejected(OutputFormat, { type: 'json_schema', schema: {} })).toBe('schema: must define 1 to 50 fields, got 0');
    expect(rejected(OutputFormat, { type: 'json_schema', schema: fields(51) })).toBe('schema: must define 1 to 50 fields, got 51');
  });

  it('rejects unknown types, non-boolean stream and unknown fields', () => {
    expect(rejected(OutputFormat, { type: 'html' })).toBe('type: must be one of json_schema, json, markdown, got "html"');
    expect(rejected(OutputFormat, { stream: 'yes' })).toBe('stream: must be true or false');
    expect(rejected(OutputFormat, { format: 'json' })).toBe('unknown field "format" (allowed: type, schema, stream)');
  });
});

describe('AnalysisResult and AnalysisResponse', () => {
  it('ties the content shape to the format', () => {
    ok(AnalysisResult, { format: 'markdown', content: '# Title' });
    ok(AnalysisResult, { format: 'json', content: { anything: [1] } });
    ok(AnalysisResult, { format: 'json_schema', content: { summary: 'x' } });
    rejected(AnalysisResult, { format: 'markdown', content: { a: 1 } });
    rejected(AnalysisResult, { format: 'json', content: 'text' });
    rejected(AnalysisResult, { format: 'json_schema', content: ['a'] });
    rejected(AnalysisResult, { format: 'html', content: '<p>' });
  });

  it('reads a result as the text a stream of it carries: markdown as is, JSON indented by two spaces', () => {
    expect(analysisText({ format: 'markdown', content: '  # Title\n', citations: [] })).toBe('  # Title\n');
    const content = { summary: 'x', scores: [1, 2], nested: { ok: true } };
    const text = analysisText({ format: 'json_schema', content, citations: [] });
    expect(text).toBe(JSON.stringify(content, null, 2));
    expect(JSON.parse(text)).toEqual(content);
  });

  const links = { job_id: UUID, ...jobUrls('analysis', UUID) };

  it('carries result exactly when completed', () => {
    ok(AnalysisResponse, { ...links, status: 'pending' });
    ok(AnalysisResponse, { ...links, status: 'completed', result: { format: 'markdown', content: 'ok' } });
    expect(rejected(AnalysisResponse, { ...links, status: 'completed' })).toMatch(/^result: /);
    expect(rejected(AnalysisResponse, { ...links, status: 'pending', result: { format: 'markdown', content: 'ok' } })).toBe(
      'result: is only present when status is completed',
    );
  });

  it('requires both polling URLs', () => {
    rejected(AnalysisResponse, { job_id: UUID, status: 'pending', status_url: links.status_url });
  });
});
