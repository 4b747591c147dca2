// The parsers on EDGAR-shaped input written the way real filings and EDGAR's JSON are: contents listing every Item,
// headings split across table cells, inline XBRL, entities, fields we do not use, values we cannot place.
import { sampleEdgarData } from '@fin/offline';
import { CompanyFacts, EdgarError, type Company } from '../src';
import { parseCompanyFacts, parseCompanyTickers, parseSubmissions, splitItems } from '../src/parse';
import { decodeEntities, extractSections, htmlParagraphs } from '../src/sections';

const LIVE = { archiveBase: 'https://www.sec.gov', sample: false };
const APPLE: Company = { cik: '0000320193', symbol: 'AAPL', name: 'Apple Inc.', sample: false };

/** A 10-K as filers lay them out: a contents table first (each Item with its page), then the Items themselves. */
const TEN_K = `<?xml version="1.0" encoding="utf-8"?>
<html><head><title>example-20250927</title><style>.x { color: red } p { margin: 0 }</style>
<script>var items = "Item 7. Not a heading";</script></head>
<body>
<div style="display:none"><ix:header><ix:hidden><ix:nonNumeric name="dei:DocumentType">10-K</ix:nonNumeric></ix:hidden></ix:header></div>
<p>UNITED STATES SECURITIES AND EXCHANGE COMMISSION</p>
<table>
<tr><td colspan="3">Part I</td></tr>
<tr><td><a href="#a">Item 1.</a></td><td><a href="#a">Business</a></td><td>1</td></tr>
<tr><td>Item 1A.</td><td>Risk Factors</td><td>5</td></tr>
<tr><td>Item 1B.</td><td>Unresolved Staff Comments</td><td>17</td></tr>
<tr><td colspan="3">Part II</td></tr>
<tr><td>Item 7.</td><td>Management&#8217;s Discussion and Analysis of Financial Condition and Results of Operations</td><td>21</td></tr>
<tr><td>Item 7A.</td><td>Quantitative and Qualitative Disclosures About Market Risk</td><td>28</td></tr>
</table>
<p style="page-break-before:always">PART I</p>
<div><span style="font-weight:700">Item 1.</span></div><div><span style="font-weight:700">Business</span></div>
<p>The Company designs &amp; sells widgets.</p>
<p>2</p><p><a href="#toc">Table of Contents</a></p>
<p><b>ITEM&#160;1A.&#160;&#160;&#160;&#160;RISK FACTORS</b></p>
<p><i>Supply of components is concentrated.</i></p>
<p>Most components come from a few suppliers&#x2019; plants; see Item 7 of this report for how costs moved.</p>
<p>Item 7 of this report discusses results, and this paragraph is prose, not a heading.</p>
<p>Item 1B. Unresolved Staff Comments</p><p>None.</p>
<p>PART II</p>
<p>Item 7. Management&rsquo;s Discussion and Analysis of Financial Condition and Results of Operations</p>
<p>Net sales were <ix:nonFraction name="us-gaap:Revenues" scale="9">416.2</ix:nonFraction> billion, up 6%.</p>
<table><tr><td>Net sales</td><td>$</td><td>416,161</td></tr></table>
<p>Item 7A. Quantitative and Qualitative Disclosures About Market Risk</p>
<p>Rates and currencies.</p>
<p>SIGNATURES</p><p>Signed by nobody.</p>
</body></html>`;

describe('sections', () => {
  it('finds the Items, not their rows in the table of contents', () => {
    const sections = extractSections(TEN_K, '10-K');
    expect(sections.map((section) => section.item)).toEqual(['1', '1A', '1B', '7', '7A']);
    expect(sections.map((section) => section.title)).toEqual([
      'Business',
      'RISK FACTORS',
      'Unresolved Staff Comments',
      'Management’s Discussion and Analysis of Financial Condition and Results of Operations',
      'Quantitative and Qualitative Disclosures About Market Risk',
    ]);
    const byItem = Object.fromEntries(sections.map((section) => [section.item, section.text]));
    expect(byItem['1']).toBe('The Company designs & sells widgets.');
    expect(byItem['1A']).toBe(
      'Supply of components is concentrated.\n\nMost components come from a few suppliers’ plants; see Item 7 of this report for how costs moved.\n\nItem 7 of this report discusses results, and this paragraph is prose, not a heading.',
    );
    expect(byItem['1B']).toBe('None.');
    expect(byItem['7']).toBe('Net sales were 416.2 billion, up 6%.\n\nNet sales $ 416,161');
    // The signatures follow the last Item and belong to none.
    expect(byItem['7A']).toBe('Rates and currencies.');
  });

  it('drops scripts, styles and the hidden inline XBRL header, and decodes entities', () => {
    const text = htmlParagraphs(TEN_K).join('\n');
    expect(text).not.toMatch(/var items|color: red|DocumentType|10-K<\//);
    expect(decodeEntities('&amp;&lt;&#8217;&#x2014;&nbsp;&rsquo;&unknown;')).toBe('&<’— ’&unknown;');
  });

  it('numbers a 10-Q’s Items within their Part', () => {
    const html = `<p>PART I — FINANCIAL INFORMATION</p><p>Item 1. Financial Statements</p><p>Tables.</p>
      <p>Item 2. Management's Discussion and Analysis</p><p>Sales rose.</p>
      <p>PART II — OTHER INFORMATION</p><p>Item 1. Legal Proceedings</p><p>None of note.</p>
      <p>Part II, Item 1A of our annual report lists the risks, and this paragraph only refers to it.</p>
      <p>Item 1A. Risk Factors</p><p>Tariffs may rise.</p>`;
    const sections = extractSections(html, '10-Q');
    expect(sections.map((section) => [section.item, section.text])).toEqual([
      ['I-1', 'Tables.'],
      ['I-2', 'Sales rose.'],
      ['II-1', 'None of note.\n\nPart II, Item 1A of our annual report lists the risks, and this paragraph only refers to it.'],
      ['II-1A', 'Tariffs may rise.'],
    ]);
  });

  it('splits an 8-K into its items', () => {
    const html = `<p>FORM 8-K</p><p>Item 2.02 Results of Operations and Financial Condition.</p><p>Results were released.</p>
      <p>Item 9.01 Financial Statements and Exhibits.</p><p>(d) Exhibit 99.1.</p>`;
    expect(extractSections(html, '8-K')).toEqual([
      { item: '2.02', title: 'Results of Operations and Financial Condition', text: 'Results were released.' },
      { item: '9.01', title: 'Financial Statements and Exhibits', text: '(d) Exhibit 99.1.' },
    ]);
  });

  it('finds no sections in a document without Item headings', () => {
    expect(extractSections('<p>Exhibit 99.1</p><p>Press release.</p>', '8-K')).toEqual([]);
  });
});

describe('submissions', () => {
  const body = {
    cik: '320193',
    name: 'Apple Inc.',
    tickers: ['AAPL'],
    addresses: { mailing: { city: 'Cupertino' } },
    filings: {
      recent: {
        accessionNumber: ['0000320193-25-000079', '0000320193-25-000077', '0000320193-98-000001'],
        filingDate: ['2025-10-31', '2025-10-30', '1998-01-02'],
        reportDate: ['2025-09-27', '', ''],
        acceptanceDateTime: ['2025-10-31T06:01:36.000Z', '2025-10-30T16:30:27.000Z', ''],
        form: ['10-K', '8-K', '10-K405'],
        items: ['', '2.02,9.01', ''],
        primaryDocument: ['aapl-20250927.htm', 'aapl-20251030.htm', ''],
        isXBRL: [1, 1, 0],
      },
      files: [{ name: 'CIK0000320193-submissions-001.json' }],
    },
  };

  it('reads the columnar arrays into filings with 8-K items and archive links, ignoring fields it does not use', () => {
    const { company, filings } = parseSubmissions(body, 'aapl', LIVE);
    expect(company).toEqual(APPLE);
    expect(filings[1]).toEqual({
      cik: '0000320193',
      accession: '0000320193-25-000077',
      form: '8-K',
      filed: '2025-10-30',
      reportDate: null,
      items: ['2.02', '9.01'],
      primaryDocument: 'aapl-20251030.htm',
      url: 'https://www.sec.gov/Archives/edgar/data/320193/000032019325000077/aapl-20251030.htm',
      sample: false,
    });
    expect(filings[0]).toMatchObject({ form: '10-K', reportDate: '2025-09-27', items: [] });
    // A filing without a primary document (paper era) links to its index page.
    expect(filings[2]?.url).toBe('https://www.sec.gov/Archives/edgar/data/320193/000032019398000001/0000320193-98-000001-index.htm');
  });

  it('splits item lists as EDGAR writes them', () => {
    expect(splitItems('2.02,9.01')).toEqual(['2.02', '9.01']);
    expect(splitItems(' 5.02 , 7.01,')).toEqual(['5.02', '7.01']);
    expect(splitItems('')).toEqual([]);
  });

  it('refuses columns of different lengths and fields of the wrong shape with EdgarError invalid_response', () => {
    const ragged = { ...body, filings: { recent: { ...body.filings.recent, form: ['10-K'] } } };
    expect(() => parseSubmissions(ragged, 'AAPL', LIVE)).toThrow(EdgarError);
    const badDate = { ...body, filings: { recent: { ...body.filings.recent, filingDate: ['31/10/2025', '2025-10-30', '1998-01-02'] } } };
    expect(() => parseSubmissions(badDate, 'AAPL', LIVE)).toThrow(/not in its documented shape/);
    const refusal = (() => {
      try {
        return parseSubmissions({ cik: 320193 }, 'AAPL', LIVE);
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toMatchObject({ kind: 'invalid_response', status: 502 });
  });
});

describe('company facts', () => {
  it('gives every value its provenance: concept, label, unit, period, fiscal period, form, filing and index page', () => {
    const body = {
      cik: 320193,
      entityName: 'Apple Inc.',
      facts: {
        'us-gaap': {
          NetIncomeLoss: {
            label: 'Net Income (Loss) Attributable to Parent',
            description: 'The portion of profit or loss …',
            units: {
              USD: [
                {
                  start: '2023-10-01',
                  end: '2024-09-28',
                  val: 93736000000,
                  accn: '0000320193-24-000123',
                  fy: 2024,
                  fp: 'FY',
                  form: '10-K',
                  filed: '2024-11-01',
                  frame: 'CY2024',
                },
                {
                  start: '2024-09-29',
                  end: '2025-09-27',
                  val: 112010000000,
                  accn: '0000320193-25-000079',
                  fy: 2025,
                  fp: 'FY',
                  form: '10-K',
                  filed: '2025-10-31',
                },
                {
                  start: '2008-09-28',
                  end: '2009-09-26',
                  val: 8235000000,
                  accn: '0001193125-09-214859',
                  fy: null,
                  fp: null,
                  form: '10-K',
                  filed: '2009-10-27',
                },
              ],
            },
          },
          Assets: {
            label: null,
            units: {
              USD: [
                {
                  end: '2025-09-27',
                  val: 359241000000,
                  accn: '0000320193-25-000079',
                  fy: 2025,
                  fp: 'FY',
                  form: '10-K',
                  filed: '2025-10-31',
                },
              ],
            },
          },
        },
      },
    };
    const parsed = parseCompanyFacts(body, APPLE, LIVE, new Date('2026-11-20T00:00:00Z'));
    expect(CompanyFacts.parse(parsed)).toEqual(parsed);
    expect(parsed.fetchedAt).toBe('2026-11-20T00:00:00.000Z');
    // Newest filing first within the concept; the value without a fiscal year is left out.
    expect(parsed.facts.map((fact) => [fact.concept, fact.fiscalYear, fact.value])).toEqual([
      ['us-gaap:NetIncomeLoss', 2025, 112010000000],
      ['us-gaap:NetIncomeLoss', 2024, 93736000000],
      ['us-gaap:Assets', 2025, 359241000000],
    ]);
    expect(parsed.facts[0]).toEqual({
      concept: 'us-gaap:NetIncomeLoss',
      label: 'Net Income (Loss) Attributable to Parent',
      unit: 'USD',
      value: 112010000000,
      start: '2024-09-29',
      end: '2025-09-27',
      fiscalYear: 2025,
      fiscalPeriod: 'FY',
      form: '10-K',
      filed: '2025-10-31',
      accession: '0000320193-25-000079',
      url: 'https://www.sec.gov/Archives/edgar/data/320193/000032019325000079/0000320193-25-000079-index.htm',
    });
    expect(parsed.facts[2]).toMatchObject({ start: null, label: 'Assets' });
  });

  it('refuses a value that is not a number', () => {
    const body = {
      cik: 1,
      entityName: 'X',
      facts: {
        'us-gaap': {
          Assets: {
            label: 'Assets',
            units: { USD: [{ end: '2025-01-01', val: 'n/a', accn: 'x', fy: 2025, fp: 'FY', form: '10-K', filed: '2025-02-01' }] },
          },
        },
      },
    };
    expect(() => parseCompanyFacts(body, APPLE, LIVE, new Date())).toThrow(EdgarError);
  });
});

describe('company tickers', () => {
  it('maps upper-case tickers to 10-digit CIKs and keeps the first entry of a ticker', () => {
    const map = parseCompanyTickers({
      ...sampleEdgarData().companyTickers,
      '90': { cik_str: 1067983, ticker: 'BRK-B', title: 'BERKSHIRE HATHAWAY INC' },
      '91': { cik_str: 1, ticker: 'AAPL', title: 'A later duplicate' },
    });
    expect(map.get('AAPL')).toEqual({ cik: '0000320193', title: 'Apple Inc.' });
    expect(map.get('BRK-B')?.cik).toBe('0001067983');
  });
});
