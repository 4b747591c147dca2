import { clampScore, GroundingSet, normaliseUrl } from '../src/grounding';

describe('grounding', () => {
  it('keeps only URLs the run returned, in their returned spelling, once each', () => {
    const set = new GroundingSet(['https://News.example.com/a/', 'https://news.example.com/b#top', 'ftp://x.example.com/file']);
    const { kept, dropped } = set.filter([
      'https://news.example.com/a',
      'https://news.example.com/b',
      'https://news.example.com/a#section',
      'https://invented.example.org/story',
      'not a url',
      'ftp://x.example.com/file',
    ]);
    expect(kept).toEqual(['https://News.example.com/a/', 'https://news.example.com/b#top']);
    expect(dropped).toEqual(['https://invented.example.org/story', 'not a url', 'ftp://x.example.com/file']);
  });

  it('normalises case of scheme and host, fragments and trailing slashes only', () => {
    expect(normaliseUrl('HTTPS://Example.COM/Path/?q=1#x')).toBe('https://example.com/Path/?q=1');
    expect(normaliseUrl('https://example.com/')).toBe('https://example.com');
    expect(normaliseUrl('https://example.com/a/')).toBe('https://example.com/a');
    expect(normaliseUrl('javascript:alert(1)')).toBeUndefined();
  });

  it('clamps relevance scores to 0–1', () => {
    expect(clampScore(1.7)).toBe(1);
    expect(clampScore(-0.2)).toBe(0);
    expect(clampScore(Number.NaN)).toBe(0);
    expect(clampScore(0.4567)).toBe(0.457);
  });
});
