// POST /api/products/stock-report
import { z } from 'zod';
import { Citations, CitedFiling } from './citations';
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

/** The fiscal period a figure covers: a fiscal year (FY) or quarter, with its dates. */
export const FigurePeriod = z
  .object({
    fiscal_year: z.int().meta({ description: "The company's fiscal year the period belongs to.", examples: [2025] }),
    fiscal_period: z.enum(['FY', 'Q1', 'Q2', 'Q3', 'Q4']).meta({ description: 'FY for a whole fiscal year, Q1–Q4 for a quarter.' }),
    start: z.iso.date().nullable().meta({ description: 'First day of a duration (income, cash flow); null for a balance at a date.' }),
    end: z.iso.date().meta({ description: 'Last day of the period, or the date of a balance.' }),
  })
  .meta({ id: 'FigurePeriod', description: 'The period a reported figure covers.' });
export type FigurePeriod = z.infer<typeof FigurePeriod>;

/** A financial figure as a company reported it to the SEC (an XBRL fact), with what traces it to its filing. */
export const FinancialFigure = z
  .object({
    symbol: z.string().meta({ description: 'The requested symbol the figure belongs to.', examples: ['AAPL'] }),
    name: z.string().meta({
      description:
        'Which figure, unique per symbol: revenue, gross_profit, operating_income, net_income, eps_diluted, total_assets, total_liabilities, stockholders_equity, current_assets, current_liabilities, cash, long_term_debt, operating_cash_flow, capital_expenditure, shares_outstanding for the latest fiscal year; `_prior_year` for the year before (growth and average equity); `_latest_quarter` for the latest 10-Q after it; `revenue_year_to_date`, `net_income_year_to_date` and their `_prior_year` for the year to date of that 10-Q and the same months a year before (the inputs of a trailing twelve months).',
      examples: ['revenue'],
    }),
    label: z.string().meta({ description: 'What the figure is, in words.', examples: ['Revenue, fiscal year 2025'] }),
    value: z.number().meta({ description: 'The value as reported, in `unit` (not scaled).', examples: [416161000000] }),
    unit: z.string().meta({ description: 'USD, USD/shares (per-share amounts) or shares.', examples: ['USD'] }),
    period: FigurePeriod,
    form: z.string().meta({ description: 'The form of the filing the value is taken from.', examples: ['10-K'] }),
    filed: z.iso.date().meta({ description: 'When that filing was filed.' }),
    accession: CitedFiling.shape.accession,
    cik: CitedFiling.shape.cik,
    concept: z.string().meta({
      description: 'The XBRL concept reported (taxonomy:name), one of the alternatives the figure accepts.',
      examples: ['us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax'],
    }),
    url: z.url().meta({ description: "The filing's index page on www.sec.gov, which a reader can open without a key." }),
    note: z.string().nullable().meta({
      description:
        'Set when the same period was reported by more than one filing: the latest filed is used, and the note says which earlier filing(s) stated it, and whether their value differed (a restatement).',
    }),
  })
  .meta({ id: 'FinancialFigure', description: 'A reported financial figure with its provenance (SEC EDGAR XBRL company facts).' });
export type FinancialFigure = z.infer<typeof FinancialFigure>;

/** A ratio computed by the service from reported figures, never by the model. */
export const FinancialRatio = z
  .object({
    symbol: z.string().meta({ description: 'The requested symbol the ratio belongs to.', examples: ['AAPL'] }),
    name: z.string().meta({
      description:
        'gross_margin, operating_margin, net_margin, return_on_equity, current_ratio, debt_to_equity, free_cash_flow, revenue_growth_yoy, net_income_growth_yoy, eps_growth_yoy, revenue_ttm, net_income_ttm (trailing twelve months).',
      examples: ['gross_margin'],
    }),
    label: z.string().meta({ description: 'What the ratio is, in words.', examples: ['Gross margin, fiscal year 2025'] }),
    value: z.number().meta({ description: 'The computed value in `unit`, rounded to 4 decimals.', examples: [46.9059] }),
    unit: z.enum(['percent', 'ratio', 'USD']).meta({ description: 'percent (46.9 means 46.9 %), ratio (times) or USD.' }),
    formula: z
      .string()
      .meta({ description: 'How it is computed, from the figures named in `inputs`.', examples: ['gross_profit / revenue × 100'] }),
    inputs: z
      .array(z.string())
      .meta({ description: 'The names of the figures (of the same symbol) it is computed from.', examples: [['gross_profit', 'revenue']] }),
  })
  .meta({ id: 'FinancialRatio', description: 'A ratio the service computed from reported figures with a stated formula.' });
export type FinancialRatio = z.infer<typeof FinancialRatio>;

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
    quick_insight_citations: z.array(Citations).default([]).meta({
      description:
        'The citations of each quick insight, in the order of quick_insights (the i-th list cites the i-th insight). Empty for results stored before quick insights carried citations.',
    }),
    figures: z.array(FinancialFigure).default([]).meta({
      description:
        "The financial figures of the report, from the companies' filings with the SEC (XBRL company facts): every figure the text states from a filing is one of these. Empty for symbols without SEC filings (figure_notes says so).",
    }),
    ratios: z
      .array(FinancialRatio)
      .default([])
      .meta({ description: 'Ratios the service computed from `figures` with the stated formulas.' }),
    figure_notes: z
      .array(z.string())
      .default([])
      .meta({
        description: 'What the reader should know about the figures: symbols without SEC filings, sample data in offline mode.',
        examples: [['No SEC filings for 7203.T: figures from filings cover companies that file with the SEC.']],
      }),
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
        quick_insights: [
          'Apple reported revenue of $416.2 billion for fiscal year 2025, up 6.4% year on year.',
          'Net cash position remains strong.',
        ],
        quick_insight_citations: [
          [
            {
              url: 'https://www.sec.gov/Archives/edgar/data/320193/000032019325000079/',
              title: 'Apple Inc. 10-K filed 2025-10-31',
              publisher: 'U.S. Securities and Exchange Commission (EDGAR)',
              published_at: '2025-10-31',
              quote:
                'revenue = 416,161,000,000 USD (416.16 billion); Revenue, fiscal year 2025 (2024-09-29 to 2025-09-27); 10-K filed 2025-10-31, accession 0000320193-25-000079, us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax',
              source: 'sec_filing',
              filing: {
                cik: '0000320193',
                accession: '0000320193-25-000079',
                form: '10-K',
                filed: '2025-10-31',
                item: null,
                concept: 'us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax',
              },
            },
          ],
          [],
        ],
        figures: [
          {
            symbol: 'AAPL',
            name: 'revenue',
            label: 'Revenue, fiscal year 2025',
            value: 416161000000,
            unit: 'USD',
            period: { fiscal_year: 2025, fiscal_period: 'FY', start: '2024-09-29', end: '2025-09-27' },
            form: '10-K',
            filed: '2025-10-31',
            accession: '0000320193-25-000079',
            cik: '0000320193',
            concept: 'us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax',
            url: 'https://www.sec.gov/Archives/edgar/data/320193/000032019325000079/',
            note: null,
          },
        ],
        ratios: [
          {
            symbol: 'AAPL',
            name: 'revenue_growth_yoy',
            label: 'Revenue growth, year on year, fiscal year 2025',
            value: 6.4259,
            unit: 'percent',
            formula: '(revenue / revenue_prior_year − 1) × 100',
            inputs: ['revenue', 'revenue_prior_year'],
          },
        ],
        figure_notes: [],
      },
    ],
  });
export type StockReportResponse = z.infer<typeof StockReportResponse>;

/** Either answer of the product endpoint: the result (200, cache hit) or the job envelope (202). */
export const StockReportProductResponse = z
  .discriminatedUnion('status', [StockReportResponse, AsyncJobResponse])
  .meta({ id: 'StockReportProductResponse', description: 'completed: served from the cache; pending: poll the job URLs.' });
export type StockReportProductResponse = z.infer<typeof StockReportProductResponse>;
