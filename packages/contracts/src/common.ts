// Building blocks shared by several products: symbols, languages, custom data, job identity and the
// asynchronous job envelope.
import ISO6391 from 'iso-639-1';
import { z } from 'zod';
import { MAX_JSON_DEPTH, dedupe, fieldError, maxJsonBytes, quote, storableJson, uuid } from './internal';
import { JobUsage } from './usage';

/**
 * A stock ticker after normalisation (trimmed, upper-cased):
 *
 *   ^(?=[A-Z0-9.-]{1,10}$)    1 to 10 characters in total, only A-Z, 0-9, "." and "-"
 *   [A-Z0-9]+                 the root symbol: letters and digits (digits first is fine: 7203.T)
 *   (?:[.-][A-Z0-9]+)?$       at most ONE class or exchange suffix, introduced by "." or "-"
 *
 * Accepts AAPL, BRK.B, RDS-A, 7203.T, 0700.HK. Rejects index carets (^GSPC), pairs (EUR/USD), spaces,
 * a leading, trailing or doubled separator (.A, A., A..B) and two suffixes (A.B.C).
 */
export const STOCK_SYMBOL_PATTERN = /^(?=[A-Z0-9.-]{1,10}$)[A-Z0-9]+(?:[.-][A-Z0-9]+)?$/;

const SYMBOL_RULE = '1 to 10 letters or digits, optionally one "." or "-" class/exchange suffix, e.g. BRK.B';

/**
 * A ticker symbol. Case and surrounding whitespace are not significant: " aapl " is read as AAPL. The input
 * side is a plain string (so the OpenAPI document does not reject lower case); the output side carries the
 * pattern. Named StockSymbol rather than Symbol so that importing it never shadows the global `Symbol`.
 */
export const StockSymbol = z
  .string({ error: fieldError('must be a string') })
  .trim()
  .toUpperCase()
  .pipe(z.string().regex(STOCK_SYMBOL_PATTERN, { error: (issue) => `${quote(issue.input)} is not a valid ticker symbol (${SYMBOL_RULE})` }))
  .meta({
    id: 'StockSymbol',
    description: `Ticker symbol, case-insensitive; surrounding whitespace is ignored and it is upper-cased. ${SYMBOL_RULE}.`,
    examples: ['AAPL', 'BRK.B', '7203.T'],
  });
export type StockSymbol = z.infer<typeof StockSymbol>;

/**
 * A list of symbols: each is normalised, repeats are dropped (the first occurrence keeps its place), and only
 * then is the count checked, so ["aapl", "AAPL"] is one symbol and counts once.
 */
export function symbolList({ min, max }: { min: number; max: number }) {
  const range = min === 0 ? `at most ${max}` : `${min} to ${max}`;
  const countError = (issue: { input?: unknown }) =>
    `expected ${range} distinct symbols, got ${Array.isArray(issue.input) ? issue.input.length : 0}`;
  return z
    .array(StockSymbol, { error: fieldError('must be an array of ticker symbols') })
    .overwrite(dedupe)
    .min(min, { error: countError })
    .max(max, { error: countError })
    .meta({
      description: `${range} ticker symbols; duplicates (after upper-casing) are removed before counting.`,
      examples: [['AAPL', 'MSFT']],
    });
}

const LANGUAGE_CODES = ISO6391.getAllCodes();

/**
 * An ISO 639-1 code from the real list (184 codes), lower-cased and trimmed first: "EN" is read as "en".
 * Rejects unassigned codes (xx), ISO 639-2/3 codes (eng) and locale tags (en-US).
 */
export const Language = z
  .string({ error: fieldError('expected an ISO 639-1 two-letter language code such as "en"') })
  .trim()
  .toLowerCase()
  .pipe(
    z.enum(LANGUAGE_CODES, {
      error: (issue) => `expected an ISO 639-1 two-letter language code such as "en" or "de", got ${quote(issue.input)}`,
    }),
  )
  .meta({
    id: 'Language',
    description: 'Output language as an ISO 639-1 two-letter code (case-insensitive). Locale tags such as en-US are not accepted.',
    examples: ['en', 'de', 'ja'],
  });
export type Language = z.infer<typeof Language>;

export const DEFAULT_LANGUAGE = 'en' satisfies Language;

/** Largest `data` object accepted, measured as compact UTF-8 JSON. */
export const CUSTOM_DATA_MAX_BYTES = 64 * 1024;

/** Caller-supplied context (e.g. recent earnings) passed to the model as-is. */
export const CustomData = z
  .record(z.string(), z.unknown(), { error: fieldError('must be a JSON object (not an array, string or number)') })
  .superRefine(storableJson())
  .superRefine(maxJsonBytes(CUSTOM_DATA_MAX_BYTES))
  .meta({
    id: 'CustomData',
    description: `Custom data supplied by the caller as a JSON object; at most ${CUSTOM_DATA_MAX_BYTES / 1024} KiB when serialised, nested at most ${MAX_JSON_DEPTH} levels deep, without NUL characters.`,
    examples: [{ recent_earnings: { quarter: 'Q3 2025', eps: 1.64 } }],
  });
export type CustomData = z.infer<typeof CustomData>;

export const JobId = uuid().meta({ id: 'JobId', description: 'Identifier of a job.', examples: ['3fa85f64-5717-4562-b3fc-2c963f66afa6'] });
export type JobId = z.infer<typeof JobId>;

export const JobStatus = z.enum(['pending', 'running', 'completed', 'failed']).meta({
  id: 'JobStatus',
  description: 'pending: accepted, not started; running: a worker is on it; completed: result available; failed: gave up (see error).',
});
export type JobStatus = z.infer<typeof JobStatus>;

export const JobType = z
  .enum(['news', 'stock-report', 'analysis'], {
    error: fieldError((input) => `must be one of news, stock-report, analysis, got ${quote(input)}`),
  })
  .meta({ id: 'JobType', description: 'The product a job belongs to; the {job_type} segment of job URLs.' });
export type JobType = z.infer<typeof JobType>;

/** The polling URLs of a job, relative to the base URL: /api/jobs/{job_type}/{job_id}/status|result. */
export function jobUrls(jobType: JobType, jobId: string): { status_url: string; result_url: string } {
  const base = `/api/jobs/${jobType}/${encodeURIComponent(jobId)}`;
  return { status_url: `${base}/status`, result_url: `${base}/result` };
}

const jobUrlPattern = (leaf: 'status' | 'result') => new RegExp(`^/api/jobs/(?:${JobType.options.join('|')})/[0-9a-fA-F-]{36}/${leaf}$`);

export const JobStatusUrl = z
  .string()
  .regex(jobUrlPattern('status'))
  .meta({
    id: 'JobStatusUrl',
    description: 'Relative URL to poll for the job status.',
    examples: ['/api/jobs/news/3fa85f64-5717-4562-b3fc-2c963f66afa6/status'],
  });
export type JobStatusUrl = z.infer<typeof JobStatusUrl>;

export const JobResultUrl = z
  .string()
  .regex(jobUrlPattern('result'))
  .meta({
    id: 'JobResultUrl',
    description: 'Relative URL to read the job result from once completed.',
    examples: ['/api/jobs/news/3fa85f64-5717-4562-b3fc-2c963f66afa6/result'],
  });
export type JobResultUrl = z.infer<typeof JobResultUrl>;

/** The 202 answer of a product call that missed the cache. */
export const AsyncJobResponse = z
  .object({
    job_id: JobId,
    status: z.literal('pending'),
    from_cache: z.literal(false),
    status_url: JobStatusUrl,
    result_url: JobResultUrl,
  })
  .meta({
    id: 'AsyncJobResponse',
    description:
      'The job was accepted and runs in the background: poll status_url (about every 2 s) until completed, then read result_url.',
    examples: [
      {
        job_id: '3fa85f64-5717-4562-b3fc-2c963f66afa6',
        status: 'pending',
        from_cache: false,
        status_url: '/api/jobs/news/3fa85f64-5717-4562-b3fc-2c963f66afa6/status',
        result_url: '/api/jobs/news/3fa85f64-5717-4562-b3fc-2c963f66afa6/result',
      },
    ],
  });
export type AsyncJobResponse = z.infer<typeof AsyncJobResponse>;

/**
 * How a result was produced. `offline: true` marks output of the offline mode (a deterministic stand-in for
 * the model, over bundled sample data): plausible, contract-valid, and not research.
 */
export const GenerationMeta = z
  .object({
    model: z.string().meta({ description: 'The model that produced the result.', examples: ['claude-sonnet-5-5'] }),
    prompt_version: z.string().meta({ description: 'The prompt (name@version) that produced the result.', examples: ['news@1'] }),
    offline: z.boolean().meta({ description: 'true when produced by the offline mode from sample data, not by the model.' }),
    generated_at: z.iso.datetime().meta({ description: 'When the result was generated (ISO 8601, UTC).' }),
    usage: JobUsage.optional(),
  })
  .meta({ id: 'GenerationMeta', description: 'Provenance of a generated result.' });
export type GenerationMeta = z.infer<typeof GenerationMeta>;
