// POST /api/products/stock-report
import { z } from 'zod';
import { Citations } from './citations';
import { AsyncJobResponse, CustomData, DEFAULT_LANGUAGE, GenerationMeta, JobId, Language, symbolList } from './common';
import { requestObject } from './internal';
import { CallbackUrl } from './webhooks';

export const StockReportRequest = requestObject({
  symbols: symbolList({ min: 1, max: 2 }).meta({
    description: 'One symbol gives a single-stock analysis, two give a comparison.',
    examples: [['AAPL'], ['AAPL', 'MSFT']],
  }),
  language: Language.default(DEFAULT_LANGUAGE),
  data: CustomData.optional(),
  callback_url: CallbackUrl,
}).meta({
  id: 'StockReportRequest',
  description: 'Equity analysis of one symbol, or a comparison of two.',
  examples: [{ symbols: ['AAPL'], language: 'en' }],
});
export type StockReportRequest = z.infer<typeof StockReportRequest>;
export type StockReportRequestInput = z.input<typeof StockReportRequest>;

export const DetailedAnalysisCategory = z
  .enum(['growth', 'profitability', 'risk', 'valuation', 'competitive'])
  .meta({ id: 'DetailedAnalysisCategory', description: 'What aspect of the company an insight is about.' });
export type DetailedAnalysisCategory = z.infer<typeof DetailedAnalysisCategory>;

export const DetailedAnalysisItem = z
  .object({
    title: z.string().meta({ description: 'Headline of the insight.' }),
    keyMetric: z.string().meta({ description: 'Supporting data point with context.' }),
    implications: z.array(z.string()).meta({ description: 'Investment implications.' }),
    investmentThesis: z.string().meta({ description: 'One-line investment summary.' }),
    category: DetailedAnalysisCategory,
    citations: Citations,
  })
  .meta({ id: 'DetailedAnalysisItem', description: 'One insight of a stock report.' });
export type DetailedAnalysisItem = z.infer<typeof DetailedAnalysisItem>;

export const QUICK_INSIGHTS_MIN = 2;
export const QUICK_INSIGHTS_MAX = 4;

/** What a completed stock-report job stores and what its result URL returns as `result`. */
export const StockReportResult = z
  .object({
    detailed_analysis: z.array(DetailedAnalysisItem).min(1),
    quick_insights: z
      .array(z.string())
      .min(QUICK_INSIGHTS_MIN, `expected ${QUICK_INSIGHTS_MIN} to ${QUICK_INSIGHTS_MAX} quick insights`)
      .max(QUICK_INSIGHTS_MAX, `expected ${QUICK_INSIGHTS_MIN} to ${QUICK_INSIGHTS_MAX} quick insights`)
      .meta({ description: '2 to 4 single-sentence insights.' }),
    meta: GenerationMeta.optional(),
  })
  .meta({ id: 'StockReportResult', description: 'Result of a stock-report job.' });
export type StockReportResult = z.infer<typeof StockReportResult>;

export const StockReportResponse = z
  .object({
    job_id: JobId,
    status: z.literal('completed'),
    from_cache: z.boolean().meta({ description: 'true when served from the 7-day result cache.' }),
    ...StockReportResult.shape,
  })
  .meta({
    id: 'StockReportResponse',
    description: 'A completed stock-report request (cache hit).',
    examples: [
      {
        job_id: '3fa85f64-5717-4562-b3fc-2c963f66afa6',
        status: 'completed',
        from_cache: true,
        detailed_analysis: [
          {
            title: 'Services drive margin expansion',
            keyMetric: 'Services gross margin 74% vs 37% for hardware',
            implications: ['Mix shift supports earnings growth above revenue growth'],
            investmentThesis: 'A growing high-margin services base underpins the valuation.',
            category: 'profitability',
            citations: [
              {
                url: 'https://example.com/2026/11/18/apple-services-revenue',
                title: 'Apple services revenue hits a record',
                publisher: 'Example News',
                published_at: '2026-11-18',
                quote: 'Services revenue rose 14% to a record $26.3 billion.',
                source: 'web_search',
              },
            ],
          },
        ],
        quick_insights: ['Services now exceed a quarter of revenue.', 'Net cash position remains strong.'],
      },
    ],
  });
export type StockReportResponse = z.infer<typeof StockReportResponse>;

/** Either answer of the product endpoint: the result (200, cache hit) or the job envelope (202). */
export const StockReportProductResponse = z
  .discriminatedUnion('status', [StockReportResponse, AsyncJobResponse])
  .meta({ id: 'StockReportProductResponse', description: 'completed: served from the cache; pending: poll the job URLs.' });
export type StockReportProductResponse = z.infer<typeof StockReportProductResponse>;
