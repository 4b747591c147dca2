// The news API role as its definition makes it (NEWS_ROLE=api: handlers, hot results, relay), on a test's pool and
// an in-process bus, as the HTTP app runService serves: its handlers behind the gateway's signed identity. Nothing is
// started (the relay stays idle), so what the tests see in the database is the handler's own doing.
import { parseConfig } from '@fin/config';
import type { Pool } from '@fin/db';
import { createMemoryBus } from '@fin/events';
import { createHandlerApp, type ServiceApp } from '@fin/http';
import { createLogger } from '@fin/log';
import { testCustomerToolsKey } from '@fin/testing';
import { newsConfigShape } from '../src/config';
import { newsService } from '../src/service';

export const SECRET = 'x'.repeat(40);

export interface NewsApi {
  app: ServiceApp;
  /** Closes what the unit made (its hot results' connection) and its bus; the pool stays the test's. */
  close(): Promise<void>;
}

export async function newsApi(databaseUrl: string, pool: Pool): Promise<NewsApi> {
  const logger = createLogger({ service: 'news-test', level: 'silent' });
  const config = parseConfig(newsConfigShape, {
    DATABASE_URL: databaseUrl,
    INTERNAL_SIGNING_SECRET: SECRET,
    KAFKA_BROKERS: '127.0.0.1:1',
    CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
    NEWS_ROLE: 'api',
    PORT: '0',
  });
  const bus = createMemoryBus({ logger });
  const unit = await newsService.unit({ config, logger, units: new Map(), pool, bus });
  return {
    app: createHandlerApp(unit, { logger, signingSecret: SECRET }),
    async close() {
      for (const closer of unit.closers) await closer.close();
      await bus.close();
    },
  };
}
