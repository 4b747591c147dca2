import { checkText, matches, mentionsIn, numbersIn, type KnownValue } from '../../src/fundamentals/figure-check';

const known = (value: number, unit: KnownValue['unit'], ref = 'x'): KnownValue<string> => ({ value, unit, ref });
const mention = (text: string) => {
  const found = mentionsIn(text);
  expect(found).toHaveLength(1);
  return found[0]!;
};

describe('the numbers a text states as financial figures', () => {
  it.each([
    ['Revenue was $391.0 billion.', 391e9, 'currency'],
    ['revenue of US$391bn', 391e9, 'currency'],
    ['net income of $93,736 million', 93_736e6, 'currency'],
    ['a market value of 3,500bn', 3_500e9, 'scaled'],
    ['capex of $12.7B', 12.7e9, 'currency'],
    ['a gross margin of 46.9%', 46.9, 'percent'],
    ['margins rose 3 percentage points', 3, 'percent'],
    ['diluted EPS of $6.11', 6.11, 'currency'],
    ['a current ratio of 0.89x', 0.89, 'multiple'],
    ['a beta of 1.21', 1.21, 'plain'],
    ['15.2 billion shares', 15.2e9, 'scaled'],
    ['416,161,000,000 USD', 416_161_000_000, 'currency'],
  ])('reads %s', (text, value, kind) => {
    const found = mention(text);
    expect(found.value).toBeCloseTo(value, 6);
    expect(found.kind).toBe(kind);
  });

  it('reads signs: -1.6%, −$1.2 billion', () => {
    expect(mention('growth of -1.6% year on year')).toMatchObject({ value: -1.6, negative: true, signed: true });
    expect(mention('a loss of −$1.2 billion')).toMatchObject({ value: -1.2e9, negative: true });
    expect(mention('a loss of $1.2 billion')).toMatchObject({ value: 1.2e9, signed: false });
  });

  it('ignores what is no figure: years, quarters, counts, forms, dates, items, accession numbers', () => {
    expect(
      mentionsIn(
        'In fiscal year 2025 (FY2025, Q3) the 10-K filed 2025-10-31, accession 0000320193-25-000079, Item 7, named 4 segments over 2024–2025; an 8-K under Item 2.02 followed.',
      ),
    ).toEqual([]);
  });

  it('knows the rounding of the stated digits', () => {
    expect(mention('$391.0 billion').rounding).toBeCloseTo(0.05e9);
    expect(mention('$391 billion').rounding).toBeCloseTo(0.5e9);
    expect(mention('24.9%').rounding).toBeCloseTo(0.05);
    expect(mention('$6.11').rounding).toBeCloseTo(0.005);
  });
});

describe('matching a stated figure against known values', () => {
  it('matches within 0.5 % of the value', () => {
    expect(matches(mention('$416.2 billion'), known(416_161_000_000, 'USD'))).toBe(true);
    // 418 is 0.44 % above 416.161; 419 is 0.68 % above it.
    expect(matches(mention('$418 billion'), known(416_161_000_000, 'USD'))).toBe(true);
    expect(matches(mention('$419 billion'), known(416_161_000_000, 'USD'))).toBe(false);
  });

  it('is rounding-aware beyond 0.5 %: "$0.4 trillion" is 391 billion rounded; "24.9%" is 24.93; "$6.11" is 6.1149', () => {
    expect(matches(mention('$0.4 trillion'), known(391e9, 'USD'))).toBe(true);
    expect(matches(mention('24.9%'), known(24.93, 'percent'))).toBe(true);
    expect(matches(mention('$6.11'), known(6.1149, 'USD/shares'))).toBe(true);
    expect(matches(mention('$6.11'), known(6.2, 'USD/shares'))).toBe(false);
    expect(matches(mention('24.9%'), known(25.2, 'percent'))).toBe(false);
  });

  it('keeps units apart: a percentage never matches dollars, nor dollars a ratio', () => {
    expect(matches(mention('46.9%'), known(46.9, 'USD'))).toBe(false);
    expect(matches(mention('$46.9'), known(46.9, 'percent'))).toBe(false);
    expect(matches(mention('0.89x'), known(0.89, 'ratio'))).toBe(true);
    expect(matches(mention('0.89x'), known(0.89, 'percent'))).toBe(false);
    // Scales matter: $391 million is not $391 billion.
    expect(matches(mention('$391 million'), known(391e9, 'USD'))).toBe(false);
  });

  it('holds a stated sign to the value; an unsigned "loss of $1.2 billion" matches the negative value', () => {
    expect(matches(mention('-1.6%'), known(-1.6, 'percent'))).toBe(true);
    expect(matches(mention('-1.6%'), known(1.6, 'percent'))).toBe(false);
    expect(matches(mention('a loss of $1.2 billion'), known(-1_200_000_000, 'USD'))).toBe(true);
  });

  it("matches a passage's numbers whatever their unit (they were cited as written)", () => {
    const quoted = numbersIn('"peRatioTtm":35.2,"revenueGrowthTtmYoyPercent":-1.6,"marketCap":3500000000000', 'quote');
    expect(checkText('P/E of 35.2, growth of -1.6% and a value of $3.5 trillion', quoted).grounded).toBe(true);
  });
});

describe('checking a text', () => {
  const figures = [known(391_035_000_000, 'USD', 'revenue'), known(24.93, 'percent', 'net_margin'), known(6.11, 'USD/shares', 'eps')];

  it('reports what each figure matched, and a figure that matches none', () => {
    const check = checkText('Revenue of $391.0 billion, a 24.9% net margin and EPS of $6.11; $12 billion of buybacks.', figures);
    expect(check.grounded).toBe(false);
    expect(check.matched.map((value) => value.ref)).toEqual(['revenue', 'net_margin', 'eps']);
    expect(check.unmatched.map((item) => item.text)).toEqual(['$12 billion']);
  });

  it('passes text without figures', () => {
    expect(checkText('Services keep growing in fiscal year 2025.', figures)).toEqual({ grounded: true, matched: [], unmatched: [] });
  });
});
