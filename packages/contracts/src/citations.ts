// Citations of generated results: each names the retrieved material a claim rests on and quotes the passage.
import { z } from 'zod';

export const CitationSource = z.enum(['market_data', 'web_search', 'customer_tool']).meta({
  id: 'CitationSource',
  description:
    "Where the cited material was retrieved during the run: market_data (the service's market data, news articles included), web_search (a web search result), customer_tool (one of your registered customer tools).",
});
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
  })
  .meta({
    id: 'Citation',
    description:
      'A passage of material the run actually retrieved that supports a claim. Every citation is checked against the retrieved material: its URL was retrieved during the run and its quote occurs in that material.',
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
