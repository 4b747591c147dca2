// `npm start`: the whole system in this process, then a banner with the API's URL, a development API key and a
// curl line; Ctrl-C (or SIGTERM) stops everything in order. See services/standalone/README.md.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createKey, createTenant } from '@fin/api-keys';
import { recordLocalDatabase } from '@fin/db';
import { onShutdownSignals } from '@fin/http';
import { createLogger } from '@fin/log';
import { createStandaloneShutdown, REPOSITORY_ROOT, startStandalone, type Standalone } from './system';

const DEV_TENANT = 'local-dev';

/** The key printed at start, kept in DATA_DIR/dev-api-key (mode 600, git-ignored) and reused while it works. */
async function developmentKey(system: Standalone, dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'dev-api-key');
  if (existsSync(file)) {
    const key = readFileSync(file, 'utf8').trim();
    // Asking the gateway is the one check that covers revocation, expiry and a database that was reset.
    const probe = await fetch(`${system.url}/api/jobs/news/00000000-0000-4000-8000-000000000000/status`, { headers: { 'X-API-Key': key } });
    if (probe.status !== 401) return key;
  }
  const { rows } = await system.pool.query('SELECT 1 FROM tenants WHERE name = $1', [DEV_TENANT]);
  if (rows.length === 0) await createTenant(system.pool, DEV_TENANT);
  const { apiKey } = await createKey(system.pool, { tenant: DEV_TENANT, name: 'npm start' });
  writeFileSync(file, `${apiKey}\n`, { mode: 0o600 });
  return apiKey;
}

/** A path inside the checkout relative to it (.data/postgres), any other in full. */
function shortPath(where: string): string {
  const relative = path.relative(REPOSITORY_ROOT, where);
  return relative.startsWith('..') || path.isAbsolute(relative) ? where : relative;
}

function banner(system: Standalone, key: string): string {
  const { url } = system;
  // The admin CLI finds this system's database through DATA_DIR/database.json; a moved DATA_DIR must be named.
  const admin = `${process.env.DATA_DIR ? `DATA_DIR=${path.resolve(process.env.DATA_DIR)} ` : ''}npm run admin --`;
  const lines = [
    '',
    `  Financial Intelligence API   ${url}   (API reference: ${url}/docs)`,
    `  Development API key          ${key}   (kept in .data/dev-api-key)`,
    `  Web portal                   ${url}/portal/tools   (sign in with the key: tools, API keys)`,
    `  MCP server (AI assistants)   ${url}/mcp   (streamable HTTP, header X-API-Key: the key)`,
    '',
    '  Try it:',
    `    curl -s -X POST ${url}/api/products/news -H 'X-API-Key: ${key}' -H 'Content-Type: application/json' -d '{"symbols":["AAPL"],"n":3}'`,
    '  then poll the status_url it returns:',
    `    curl -s ${url}/api/jobs/news/<job_id>/status -H 'X-API-Key: ${key}'`,
    '',
    '  Operate it (tenants, keys, limits) from the repository while it runs:',
    `    ${admin} keys list`,
    `    ${admin} keys create --tenant ${DEV_TENANT} --name second --json`,
    '',
    `  Metrics (Prometheus): ${system.metricsUrl}`,
    `  Database: ${system.embeddedDataDir ? `embedded PostgreSQL in ${shortPath(system.embeddedDataDir)}` : 'DATABASE_URL'} · events: ${system.bus === 'kafka' ? 'Kafka (KAFKA_BROKERS)' : 'in-process bus'} · AI: ${system.offline ? 'OFFLINE mode (no ANTHROPIC_API_KEY; sample data, results marked offline)' : 'Anthropic API'}`,
    ...(system.localWebhooks
      ? [
          '  Local webhooks: ON (WEBHOOK_ALLOW_LOCAL_HTTP) · webhooks and callback_url may be http://localhost, http://127.0.0.1',
          '    or http://[::1] receivers on this machine (development only: refused with NODE_ENV=production; docs/products.md#receiving-webhooks-on-your-own-machine)',
        ]
      : []),
    '  Ctrl-C stops everything.',
    '',
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  const logger = createLogger({ service: 'standalone', level: process.env.LOG_LEVEL || 'info' });
  const dataDir = process.env.DATA_DIR || path.join(REPOSITORY_ROOT, '.data');
  const system = await startStandalone({ dataDir });
  onShutdownSignals(createStandaloneShutdown(system, logger, (code) => process.exit(code)));
  // The admin CLI and `npm run migrate` find this database through the record (@fin/db local-database.ts).
  recordLocalDatabase(dataDir, {
    url: system.databaseUrl,
    pid: process.pid,
    embedded: system.embedded,
    startedAt: new Date().toISOString(),
  });
  const key = await developmentKey(system, dataDir);
  process.stdout.write(`${banner(system, key)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`The system could not start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
