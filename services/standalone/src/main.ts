// `npm start`: the whole system in this process (runSystem over the services' definitions), then a banner with the
// API's URL, a development API key and a curl line; Ctrl-C (or SIGTERM) stops everything in order. A config that
// does not parse exits 78, a start that fails exits 1. See services/standalone/README.md.
import path from 'node:path';
import { runSystem, type Launched } from '@fin/http';
import { DEV_TENANT, REPOSITORY_ROOT, STANDALONE_SERVICES, standaloneSystem, type StandaloneFacts } from './system';

/** A path inside the checkout relative to it (.data/postgres), any other in full. */
function shortPath(where: string): string {
  const relative = path.relative(REPOSITORY_ROOT, where);
  return relative.startsWith('..') || path.isAbsolute(relative) ? where : relative;
}

function banner({ url, metricsUrl }: Launched, system: StandaloneFacts): string {
  const key = system.apiKey;
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
    "  and a company's SEC filings (then /api/filings/<accession>?symbol=AAPL for its sections):",
    `    curl -s '${url}/api/filings?symbol=AAPL&forms=10-K,10-Q&limit=3' -H 'X-API-Key: ${key}'`,
    '',
    '  Operate it (tenants, keys, limits) from the repository while it runs:',
    `    ${admin} keys list`,
    `    ${admin} keys create --tenant ${DEV_TENANT} --name second --json`,
    '',
    `  Metrics (Prometheus): ${metricsUrl}`,
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
  const system = standaloneSystem({ dataDir: process.env.DATA_DIR || path.join(REPOSITORY_ROOT, '.data') });
  const launched = await runSystem(STANDALONE_SERVICES, system);
  // runSystem has exited already when the start failed.
  if (launched === undefined) return;
  const gateway = launched.units.get('gateway');
  if (gateway === undefined || launched.url === undefined) throw new Error('the gateway does not listen');
  system.bindGateway(gateway, launched.url);
  process.stdout.write(`${banner(launched, system.facts())}\n`);
}

void main();
