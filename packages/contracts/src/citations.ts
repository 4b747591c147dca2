// Citations of generated results: each names the retrieved material a claim rests on and quotes the passage.
import { z } from 'zod';

export const CitationSource = z.enum(['market_data', 'web_search', 'customer_tool', 'sec_filing']).meta({
  id: 'CitationSource',
  description:
    "Where the cited material was retrieved during the run: market_data (the service's market data, news articles included), web_search (a web search result), customer_tool (one of your registered customer tools), sec_filing (a filing with the SEC, read from EDGAR: `filing` says which).",
});

/** Which filing a `sec_filing` citation rests on: enough to find it on EDGAR without the URL. */
export const CitedFiling = z
  .object({
    cik: z
      .string()
      .regex(/^\d{10}$/)
      .meta({ description: "The filer's Central Index Key, 10 digits.", examples: ['0000320193'] }),
    accession: z
      .string()
      .regex(/^\d{10}-\d{2}-\d{6}$/)
      .meta({ description: 'The accession number of the filing, as EDGAR writes it.', examples: ['0000320193-25-000079'] }),
    form: z.string().meta({ description: 'The form type (10-K, 10-Q, 8-K, …).', examples: ['10-K'] }),
    filed: z.iso.date().meta({ description: 'When the filing was filed (YYYY-MM-DD).' }),
    item: z
      .string()
      .nullable()
      .meta({ description: 'The item of the filing the quote is from ("7", "1A", "2.02"); null for an XBRL fact, which `concept` names.' }),
    concept: z
      .string()
      .nullable()
      .meta({
        description: 'The XBRL concept (taxonomy:name) of a reported figure, e.g. us-gaap:Revenues; null for a quote from a section.',
        examples: ['us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax'],
      }),
  })
  .meta({ id: 'CitedFiling', description: 'The SEC filing a citation rests on.' });
export type CitedFiling = z.infer<typeof CitedFiling>;
export type CitationSource = z.infer<typeof CitationSource>;

export const Citation = z
  .object({
    url: z
      .url({ protocol: /^https?$/ })
      .meta({ description: 'Where the cited material lives: the article, page or data resource the run retrieved.' }),
    title: z.string().meta({ description: 'Title of the material, as the material gives it.' }),
    publisher: z.string().meta({
      description: "Who published the material: the source the material names (e.g. a news article's outlet), else the URL's host.",
    }),
    published_at: z.iso
      .date()
      .nullable()
      .meta({ description: 'Publication date (YYYY-MM-DD, UTC) as the material states it; null when the material has none.' }),
    quote: z.string().min(1).meta({
      description: 'The passage of the material that supports the claim, verbatim as it was retrieved.',
    }),
    source: CitationSource,
    filing: CitedFiling.optional().meta({
      description:
        "Present exactly when `source` is sec_filing: the filing (CIK, accession number, form, filing date) and the item or XBRL concept quoted. For a reported figure `quote` is the figure as the run was given it, and `url` the filing's index page on www.sec.gov.",
    }),
  })
  .meta({
    id: 'Citation',
    description:
      'A passage of material the run actually retrieved that supports a claim. Every citation is checked against the retrieved material: its URL was retrieved during the run and its quote occurs in that material. A figure from an SEC filing is cited by the service itself (source sec_filing, with `filing`), from the figure the text states.',
    examples: [
      {
        url: 'https://example.com/2026/11/18/apple-services-revenue',
        title: 'Apple services revenue hits a record',
        publisher: 'Example News',
        published_at: '2026-11-18',
        quote: 'Services revenue rose 14% to a record $26.3 billion.',
        source: 'market_data',
      },
    ],
  });
export type Citation = z.infer<typeof Citation>;

/**
 * The citations of a result part. Results stored before citations existed have none: they read as an empty list.
 */
export const Citations = z.array(Citation).default([]).meta({
  id: 'Citations',
  description: 'The passages of retrieved material this part rests on (empty when none could be verified).',
});
