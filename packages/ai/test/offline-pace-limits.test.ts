// Offline mode's stand-in with the model's pace and the organisation's rate limits switched on by configuration
// (AI_OFFLINE_PACE, AI_OFFLINE_RATE_LIMITS, AI_OFFLINE_TIME_SCALE): the engine runs unchanged through the
// anthropic-ratelimit-* headers, and a 429 reaches it as the SDK reports it, mapped to `rate_limited`.
import { ConfigError, parseConfig } from '@fin/config';
import { NewsRequest, NewsResult } from '@fin/contracts';
import { AiError, aiConfigShape, createAiEngine } from '../src';
import { silentLogger } from './helpers';

const engineWith = (env: Record<string, string>) =>
  createAiEngine({ config: parseConfig(aiConfigShape, { AI_MAX_RETRIES: '0', ...env }), logger: silentLogger });

describe('offline stand-in pace and limits', () => {
  it('are off unless configured, and a malformed limit is refused naming the variable', () => {
    const config = parseConfig(aiConfigShape, {});
    expect(config.AI_OFFLINE_PACE).toBe(false);
    expect(config.AI_OFFLINE_RATE_LIMITS).toBeUndefined();
    expect(config.AI_OFFLINE_TIME_SCALE).toBe(1);
    expect(() => parseConfig(aiConfigShape, { AI_OFFLINE_RATE_LIMITS: '{"models": {"claude-haiku-5-5": {"rpm": 5}}}' })).toThrow(
      ConfigError,
    );
    expect(() => parseConfig(aiConfigShape, { AI_OFFLINE_RATE_LIMITS: 'many' })).toThrow(/AI_OFFLINE_RATE_LIMITS/);
    expect(() => parseConfig(aiConfigShape, { AI_OFFLINE_TIME_SCALE: '0' })).toThrow(/AI_OFFLINE_TIME_SCALE/);
  });

  it('runs a product at a compressed pace within generous limits', async () => {
    const engine = await engineWith({
      AI_OFFLINE_PACE: 'true',
      AI_OFFLINE_TIME_SCALE: '0.01',
      AI_OFFLINE_RATE_LIMITS: JSON.stringify({
        allModels: { requestsPerMinute: 100, inputTokensPerMinute: 1_000_000, outputTokensPerMinute: 400_000 },
      }),
    });
    try {
      const { result } = await engine.news(NewsRequest.parse({ symbols: ['AAPL'], n: 2 }));
      expect(NewsResult.parse(result).news).toHaveLength(2);
    } finally {
      await engine.close();
    }
  });

  it("fails a run whose model call gets the organisation's 429 as rate_limited, with the API's retry-after", async () => {
    const engine = await engineWith({ AI_OFFLINE_RATE_LIMITS: JSON.stringify({ allModels: { requestsPerMinute: 1 } }) });
    try {
      // A news run makes more than one model call (a tool round, then the answer): the second is refused.
      const failure = await engine.news(NewsRequest.parse({ symbols: ['AAPL'], n: 1 })).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(AiError);
      expect(failure).toMatchObject({ kind: 'rate_limited', retryable: true, retryAfterSeconds: 60 });
    } finally {
      await engine.close();
    }
  });
});
