// A gateway process for the --breakdown measurements: the real application (createApp, the Postgres-backed
// authenticator, the upstream over undici connection pools: overHttp of the gateway's definition, src/service.ts),
// with one part swapped out so that its cost can be told apart from the rest:
//
//   BENCH_VARIANT=no-rate-limit   rate limiting is a pass-through (no express-rate-limit, no Postgres upsert)
//
// It is an analysis tool, not something to deploy: the real gateway always limits. The gateway's parts are its
// compiled output (services/gateway/dist), the code the gateway's image runs.
import { loadConfig } from '@fin/config';
import { createPool } from '@fin/db';
import { createLogger } from '@fin/log';
import type * as App from '../../../services/gateway/src/app';
import type * as Auth from '../../../services/gateway/src/auth';
import type * as Config from '../../../services/gateway/src/config';
import type { RateLimits } from '../../../services/gateway/src/rate-limit';
import type * as Service from '../../../services/gateway/src/service';
import { compiledModule } from '../lib/processes';

const gateway = 'services/gateway';
const { createApp } = compiledModule(gateway, 'app') as typeof App;
const { createAuthenticator } = compiledModule(gateway, 'auth') as typeof Auth;
const { gatewayConfigShape } = compiledModule(gateway, 'config') as typeof Config;
const { overHttp } = compiledModule(gateway, 'service') as typeof Service;

const noRateLimits: RateLimits = {
  admit: () => Promise.resolve(undefined),
  acquireChatSlot: () => Promise.resolve(() => Promise.resolve()),
  close: () => Promise.resolve(),
};

function main(): void {
  const variant = process.env.BENCH_VARIANT;
  if (variant !== 'no-rate-limit') throw new Error(`BENCH_VARIANT must be no-rate-limit, got ${variant ?? '(unset)'}`);
  const config = loadConfig(gatewayConfigShape);
  const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
  const pool = createPool({ connectionString: config.DATABASE_URL, applicationName: 'gateway-variant' });
  const authenticator = createAuthenticator({ pool, logger });
  const app = createApp({
    logger,
    authenticator,
    rateLimits: noRateLimits,
    // The gateway's own upstream to the services' processes, as main.ts (runService) makes it.
    upstream: overHttp({ config, logger, units: new Map() }),
    readiness: async () => {
      await pool.query('SELECT 1');
    },
  });
  const server = app.listen(config.PORT, config.HOST);
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main();
