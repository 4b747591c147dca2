// Offline sentiment reads headlines as a reader of financial news does: slipping shares, margin pressure and a
// guide below consensus are bad news, a beat and a buyback good news, a negation turns a word around, and a
// headline with no such language is neutral.
import { textSentiment } from '../src';

describe('offline sentiment', () => {
  it.each([
    ['Acme flags margin pressure from higher input costs', -0.67],
    ['Acme shares slip after a peer in the technology sector warns on demand', -0.67],
    ['Acme shares slip', -0.5],
    ['Acme guides next quarter slightly below consensus', -0.5],
    ['Regulators open review of Acme pricing practices', -0.5],
    ['Acme quarterly revenue comes in ahead of guidance', 0.5],
    ['Analysts raise price targets on Acme after investor day', 0.5],
    ['Acme announces 4.0 billion dollar share buyback', 0.5],
    ['Acme expands capacity as demand in its markets holds up', 0.67],
    ['Acme names a new chief financial officer', 0],
    ['Acme signs multi-year agreement with a major customer', 0],
  ])('%s → %d', (headline, score) => {
    expect(textSentiment(headline)).toBe(score);
  });

  it('turns a word around after a negation, and does not count a phrase twice', () => {
    expect(textSentiment('Demand is not weak')).toBe(0.5);
    expect(textSentiment('Acme failed to beat estimates')).toBe(-0.5);
    expect(textSentiment("Sales didn't grow")).toBe(-0.5);
    // "margin pressure" is one hit, not "margin pressure" and "pressure".
    expect(textSentiment('Margin pressure')).toBe(-0.5);
    // Mixed news: one good, one bad.
    expect(textSentiment('Revenue beat estimates but shares slip')).toBe(0);
  });
});
