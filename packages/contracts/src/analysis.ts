// POST /api/analysis
import { z } from 'zod';
import { Citations } from './citations';
import { CustomData, GenerationMeta, JobId, JobResultUrl, JobStatusUrl, StockSymbol, symbolList } from './common';
import { UNSTORABLE_TEXT_MESSAGE, fieldError, isStorableText, quote, requestObject } from './internal';
import { CallbackUrl } from './webhooks';

/** Longest prompt accepted, in UTF-16 code units (JavaScript string length) after trimming. */
export const ANALYSIS_PROMPT_MAX = 8000;
export const ANALYSIS_SYMBOLS_MAX = 10;
export const PORTFOLIO_HOLDINGS_MAX = 50;
/** The percentages of a portfolio must add up to 100 within this many points (rounding in the caller's data). */
export const PORTFOLIO_TOTAL_TOLERANCE = 1;
/** Type names a json_schema output field may have. */
export const OUTPUT_SCHEMA_TYPE_NAMES = ['string', 'number', 'integer', 'boolean', 'array', 'object'] as const;
export const OUTPUT_SCHEMA_FIELDS_MAX = 50;

export const PortfolioHolding = requestObject({
  symbol: StockSymbol,
  percentage: z
    .number({ error: fieldError('must be a number') })
    .min(0, 'must not be negative')
    .max(100, 'must not be over 100')
    .meta({ description: 'Share of the portfolio in percent, 0 to 100.', examples: [40] }),
}).meta({ id: 'PortfolioHolding', description: 'One position of a portfolio.' });
export type PortfolioHolding = z.infer<typeof PortfolioHolding>;

export const PortfolioComposition = z
  .array(PortfolioHolding, { error: fieldError('must be an array of {symbol, percentage} objects') })
  .min(1, 'must list at least one holding when present')
  .max(PORTFOLIO_HOLDINGS_MAX, `must list at most ${PORTFOLIO_HOLDINGS_MAX} holdings`)
  .superRefine((holdings, ctx) => {
    const firstIndex = new Map<string, number>();
    for (const [index, { symbol }] of holdings.entries()) {
      const first = firstIndex.get(symbol);
      if (first === undefined) firstIndex.set(symbol, index);
      else
        ctx.addIssue({
          code: 'custom',
          path: [index, 'symbol'],
          message: `duplicate symbol ${quote(symbol)}, already at position ${first}`,
        });
    }
    const total = holdings.reduce((sum, holding) => sum + holding.percentage, 0);
    if (holdings.length > 0 && Math.abs(total - 100) > PORTFOLIO_TOTAL_TOLERANCE) {
      const shown = Math.round(total * 100) / 100;
      ctx.addIssue({ code: 'custom', message: `percentages must add up to 100 (±${PORTFOLIO_TOTAL_TOLERANCE}), got ${shown}` });
    }
  })
  .meta({
    id: 'PortfolioComposition',
    description: `1 to ${PORTFOLIO_HOLDINGS_MAX} holdings with distinct symbols whose percentages add up to 100 (±${PORTFOLIO_TOTAL_TOLERANCE}).`,
    examples: [
      [
        { symbol: 'AAPL', percentage: 60 },
        { symbol: 'MSFT', percentage: 40 },
      ],
    ],
  });
export type PortfolioComposition = z.infer<typeof PortfolioComposition>;

export const OutputFormatType = z
  .enum(['json_schema', 'json', 'markdown'], {
    error: fieldError((input) => `must be one of json_schema, json, markdown, got ${quote(input)}`),
  })
  .meta({
    id: 'OutputFormatType',
    description:
      "json_schema: structured output with the fields of `schema`; json: a JSON object of the model's choosing; markdown: formatted text.",
  });
export type OutputFormatType = z.infer<typeof OutputFormatType>;

export const OutputSchemaTypeName = z
  .enum(OUTPUT_SCHEMA_TYPE_NAMES, {
    error: fieldError((input) => `must be one of ${OUTPUT_SCHEMA_TYPE_NAMES.join(', ')}, got ${quote(input)}`),
  })
  .meta({ id: 'OutputSchemaTypeName', description: 'JSON type of one output field of a json_schema answer.' });
export type OutputSchemaTypeName = z.infer<typeof OutputSchemaTypeName>;

/** A field name the model can emit and every client language can address: an identifier of up to 64 chars. */
const OUTPUT_FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

export const OutputSchema = z
  .record(
    z.string().regex(OUTPUT_FIELD_NAME, 'must start with a letter or "_" and contain only letters, digits and "_" (at most 64 characters)'),
    OutputSchemaTypeName,
    { error: fieldError('must be an object mapping field names to type names') },
  )
  .superRefine((schema, ctx) => {
    const count = Object.keys(schema).length;
    if (count < 1 || count > OUTPUT_SCHEMA_FIELDS_MAX) {
      ctx.addIssue({ code: 'custom', message: `must define 1 to ${OUTPUT_SCHEMA_FIELDS_MAX} fields, got ${count}` });
    }
  })
  .meta({
    id: 'OutputSchema',
    description: `Output field name → type name (${OUTPUT_SCHEMA_TYPE_NAMES.join(', ')}); 1 to ${OUTPUT_SCHEMA_FIELDS_MAX} fields.`,
    minProperties: 1,
    maxProperties: OUTPUT_SCHEMA_FIELDS_MAX,
    examples: [{ summary: 'string', risk_score: 'number', risks: 'array' }],
  });
export type OutputSchema = z.infer<typeof OutputSchema>;

export const OutputFormat = requestObject({
  type: OutputFormatType.default('markdown'),
  schema: OutputSchema.optional(),
  stream: z
    .boolean({ error: 'must be true or false' })
    .default(false)
    .meta({ description: 'true answers with an SSE stream (synthesis_chunk … done).' }),
})
  .superRefine((format, ctx) => {
    if (format.type === 'json_schema' && format.schema === undefined) {
      ctx.addIssue({ code: 'custom', path: ['schema'], message: 'is required when type is json_schema' });
    }
    if (format.type !== 'json_schema' && format.schema !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['schema'], message: `is only allowed when type is json_schema (type is ${format.type})` });
    }
  })
  .meta({ id: 'OutputFormat', description: '`schema` is required with type json_schema and not allowed otherwise.' });
export type OutputFormat = z.infer<typeof OutputFormat>;
export type OutputFormatInput = z.input<typeof OutputFormat>;

export const AnalysisRequest = requestObject({
  prompt: z
    .string({ error: fieldError('must be a string') })
    .trim()
    .min(1, 'must not be empty')
    .max(ANALYSIS_PROMPT_MAX, `must be at most ${ANALYSIS_PROMPT_MAX} characters`)
    .refine(isStorableText, UNSTORABLE_TEXT_MESSAGE)
    .meta({
      description: `The analysis question, 1 to ${ANALYSIS_PROMPT_MAX} characters (surrounding whitespace is removed).`,
      examples: ['How exposed is this portfolio to rising interest rates?'],
    }),
  symbols: symbolList({ min: 0, max: ANALYSIS_SYMBOLS_MAX }).optional(),
  portfolio_composition: PortfolioComposition.optional(),
  data: CustomData.optional(),
  callback_url: CallbackUrl,
  output_format: OutputFormat.default({ type: 'markdown', stream: false }),
}).meta({
  id: 'AnalysisRequest',
  description: 'A free-form prompt answered in the chosen output format.',
  examples: [
    {
      prompt: 'How exposed is this portfolio to rising interest rates?',
      portfolio_composition: [
        { symbol: 'AAPL', percentage: 60 },
        { symbol: 'MSFT', percentage: 40 },
      ],
      output_format: { type: 'json_schema', schema: { summary: 'string', risk_score: 'number' }, stream: false },
    },
  ],
});
export type AnalysisRequest = z.infer<typeof AnalysisRequest>;
export type AnalysisRequestInput = z.input<typeof AnalysisRequest>;

const JsonObject = z.record(z.string(), z.unknown());

/**
 * The answer of an analysis job, tagged with the format that was asked for:
 * - markdown: `content` is the formatted text (a string);
 * - json: `content` is a JSON object whose shape the model chose;
 * - json_schema: `content` is a JSON object with exactly the fields of the request's `schema`, each of the named
 *   type. That per-request shape cannot be stated here; the analysis service checks it before completing the job.
 * A tagged union (rather than `content: string | object`) lets clients switch on `format` without sniffing.
 */
export const AnalysisResult = z
  .discriminatedUnion('format', [
    z.object({ format: z.literal('markdown'), content: z.string(), citations: Citations, meta: GenerationMeta.optional() }),
    z.object({ format: z.literal('json'), content: JsonObject, citations: Citations, meta: GenerationMeta.optional() }),
    z.object({ format: z.literal('json_schema'), content: JsonObject, citations: Citations, meta: GenerationMeta.optional() }),
  ])
  .meta({
    id: 'AnalysisResult',
    description: 'markdown → content is text; json → content is an object; json_schema → content is an object with the requested fields.',
    examples: [
      {
        format: 'json_schema',
        content: { summary: 'Moderate rate sensitivity.', risk_score: 0.4 },
        citations: [
          {
            url: 'https://sample-market-data.example.com/api/v1/stock/metric?symbol=AAPL&metric=all',
            title: 'AAPL basic financials',
            publisher: 'sample-market-data.example.com',
            published_at: null,
            quote: '"beta":1.21',
            source: 'market_data',
          },
        ],
      },
    ],
  });
export type AnalysisResult = z.infer<typeof AnalysisResult>;

/**
 * The text of an analysis result: what a streamed analysis sends as `synthesis_chunk` events, in order, and what
 * its `result` at the result URL therefore reads as. markdown: `content` itself, character for character.
 * json and json_schema: `content` as JSON with two-space indentation, so `JSON.parse` of the concatenated chunks
 * equals `content`.
 */
export function analysisText(result: AnalysisResult): string {
  return result.format === 'markdown' ? result.content : JSON.stringify(result.content, null, 2);
}

const analysisJobLinks = { job_id: JobId, status_url: JobStatusUrl, result_url: JobResultUrl };

/** Non-streamed answer of POST /api/analysis: `result` is present exactly when status is completed. */
export const AnalysisResponse = z
  .discriminatedUnion('status', [
    z.object({
      ...analysisJobLinks,
      status: z.literal('pending'),
      result: z.never({ error: 'is only present when status is completed' }).optional(),
    }),
    z.object({ ...analysisJobLinks, status: z.literal('completed'), result: AnalysisResult }),
  ])
  .meta({
    id: 'AnalysisResponse',
    description: 'pending: poll status_url; completed: result inline (the URLs stay valid).',
    examples: [
      {
        job_id: '3fa85f64-5717-4562-b3fc-2c963f66afa6',
        status: 'pending',
        status_url: '/api/jobs/analysis/3fa85f64-5717-4562-b3fc-2c963f66afa6/status',
        result_url: '/api/jobs/analysis/3fa85f64-5717-4562-b3fc-2c963f66afa6/result',
      },
    ],
  });
export type AnalysisResponse = z.infer<typeof AnalysisResponse>;
