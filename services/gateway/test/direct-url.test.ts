import { parseConfig } from '@fin/config';
import { createPool, type Pool } from '@fin/db';
import { serveDefinition, served } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { gatewayConfigShape } from '../src/config';
import { gatewayService } from '../src/service';

const logger = createLogger({ service: 'gateway-direct-url-test', level: 'silent' });

/**
 * Behind a transaction pooler the gateway's LISTEN for key changes must not go through DATABASE_URL (a LISTEN left
 * on a pooled server connection hears nothing for this process); with DATABASE_DIRECT_URL it opens on that URL.
 */
describe('gateway with DATABASE_DIRECT_URL', () => {
  let db: TestDatabase;
  let observer: Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    observer = createPool({ connectionString: db.url, applicationName: 'gateway-direct-url-observer', max: 1 });
  });
  afterAll(async () => {
    await observer.end();
    await db.drop();
  });

  const listeners = async () => {
    const { rows } = await observer.query<{ application_name: string }>(
      `SELECT application_name FROM pg_stat_activity WHERE query = 'LISTEN api_key_changed' AND datname = current_database()`,
    );
    return rows.map((row) => row.application_name);
  };

  async function withGateway(env: Record<string, string>, check: () => Promise<void>): Promise<void> {
    const config = parseConfig(gatewayConfigShape, {
      PORT: '0',
      INTERNAL_SIGNING_SECRET: 'gateway-direct-url-test-signing-secret-0123',
      DATABASE_URL: db.url,
      ...env,
    });
    const gateway = served(await serveDefinition(gatewayService(), { config, logger }));
    try {
      await check();
    } finally {
      await new Promise((resolve) => {
        gateway.server.close(resolve);
        gateway.server.closeAllConnections();
      });
      for (const closer of gateway.closers) await closer.close();
    }
  }

  it('listens for key changes on the direct URL when it is set', async () => {
    await withGateway({ DATABASE_DIRECT_URL: db.url }, async () => {
      expect(await waitFor(async () => (await listeners()).length > 0 && listeners(), { what: 'the LISTEN' })).toEqual(['gateway-direct']);
    });
    await waitFor(async () => (await listeners()).length === 0, { what: 'the LISTEN to close' });
  });

  it('listens on DATABASE_URL otherwise', async () => {
    await withGateway({}, async () => {
      expect(await waitFor(async () => (await listeners()).length > 0 && listeners(), { what: 'the LISTEN' })).toEqual(['gateway']);
    });
  });
});
