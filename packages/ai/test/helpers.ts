import { parseConfig } from '@fin/config';
import { startFakeAnthropic, type FakeAnthropic } from '@fin/fakes';
import { createLogger } from '@fin/log';
import { aiConfigShape, createAiEngine, type AiEngine, type EngineOptions } from '../src';
import { SampleMarketDataProvider } from '../src/market-data';

export const silentLogger = createLogger({ service: 'ai-test', level: 'silent' });

/** An engine whose SDK talks to a scripted fake Messages API, with sample market data. */
export async function scriptedEngine(
  env: Record<string, string> = {},
  options: Pick<EngineOptions, 'budget' | 'filings'> = {},
): Promise<{ fake: FakeAnthropic; engine: AiEngine; close: () => Promise<void> }> {
  const fake = await startFakeAnthropic();
  const config = parseConfig(aiConfigShape, {
    ANTHROPIC_API_KEY: 'sk-ant-test-0000000000',
    ANTHROPIC_BASE_URL: fake.url,
    AI_MAX_RETRIES: '0',
    AI_WEB_SEARCH: 'false',
    ...env,
  });
  const engine = await createAiEngine({ config, logger: silentLogger, marketData: new SampleMarketDataProvider(), ...options });
  return {
    fake,
    engine,
    close: async () => {
      await engine.close();
      await fake.close();
    },
  };
}

export async function drain<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}
