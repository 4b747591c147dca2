// The baseline of the npm-start scenario (issue 28): its two requests answered by about the least a Node service
// does for them. express 5, express.json(), one pg Pool, one process; the same look-ups as the system and nothing
// else: no rate limits, logs, metrics, request ids or validation (the runner sends one known body). The key hash,
// the cache keys and the prompt version are the system's own functions (compiled output), so it finds the same rows.
// It remembers a key's tenant for one second, as a user's monolith would (issue 36): a baseline that asks Postgres
// for the key on every request is one nobody would write, and flatters the system it is compared with. It listens
// on PORT (0: a free one) and prints its address, so that it runs beside anything else on the machine.
import express, { type Request } from 'express';
import pg, { type QueryResultRow } from 'pg';
import type * as Prompts from '../../../packages/ai/src/prompts';
import type * as ApiKey from '../../../packages/api-keys/src/api-key';
import type * as CacheKey from '../../../packages/job-store/src/cache-key';
import { compiledModule } from '../lib/processes';

const { loadPrompt } = compiledModule('packages/ai', 'prompts') as typeof Prompts;
const { hashApiKey } = compiledModule('packages/api-keys', 'api-key') as typeof ApiKey;
const { cacheKeysFor } = compiledModule('packages/job-store', 'cache-key') as typeof CacheKey;
const prompt = loadPrompt('news').id;
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, application_name: 'bench-monolith' });
/** The first row of a prepared statement, as the system's look-ups are. */
const one = async <T extends QueryResultRow>(name: string, text: string, values: unknown[]) =>
  (await pool.query<T>({ name, text, values })).rows[0];

/** Keys that worked in the last second, with their tenant: a revocation takes effect within a second. */
const keys = new Map<string, { tenantId: string; until: number }>();

/** The tenant of a key that works now (packages/api-keys/src/lookup.ts) and may call the news product. */
const tenantOf = async (req: Request) => {
  const key = req.get('x-api-key') ?? '';
  const known = keys.get(key);
  if (known !== undefined && known.until > Date.now()) return known.tenantId;
  const row = await one<{ tenant_id: string }>(
    'key',
    `SELECT k.tenant_id FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.key_hash = $1 AND k.revoked_at IS NULL
      AND (k.expires_at IS NULL OR k.expires_at > now()) AND t.disabled_at IS NULL AND 'news' = ANY (k.scopes)`,
    [hashApiKey(key)],
  );
  if (row === undefined) keys.delete(key);
  else keys.set(key, { tenantId: row.tenant_id, until: Date.now() + 1000 });
  return row?.tenant_id;
};

const app = express();
app.set('etag', false); // as the system's apps (packages/http): hashing every body is work the system does not do
app.use(express.json());
app.get('/healthz', (_req, res) => res.json({ status: 'ok' }));
app.post('/api/products/news', async (req, res) => {
  const tenantId = await tenantOf(req);
  if (tenantId === undefined) return void res.status(401).json({ detail: 'Invalid API key.' });
  const { symbols, n, language } = req.body as { symbols: string[]; n: number; language: string };
  const { shared, own } = cacheKeysFor({ jobType: 'news', parameters: { symbols: [...symbols].sort(), n, language, prompt }, tenantId });
  const hit = await one<{ job_id: string; result: string }>(
    'cache',
    `SELECT job_id, result::text AS result FROM result_cache WHERE cache_key = ANY ($1::text[]) AND expires_at > now()
        AND (tenant_id IS NULL OR tenant_id = $2) ORDER BY created_at DESC LIMIT 1`,
    [[shared, own], tenantId],
  );
  if (hit === undefined) return void res.status(404).json({ detail: 'Not in the cache.' });
  // The result as the database sends it (jsonb text) behind the job's fields, as the system answers a hit: no parsing.
  res.type('application/json').send(`{"job_id":"${hit.job_id}","status":"completed","from_cache":true,${hit.result.slice(1)}`);
});
app.get('/api/jobs/news/:id/status', async (req, res) => {
  const tenantId = await tenantOf(req);
  if (tenantId === undefined) return void res.status(401).json({ detail: 'Invalid API key.' });
  const sql = `SELECT status, progress, currently_working_on FROM jobs WHERE id = $1 AND tenant_id = $2 AND type = 'news'`;
  const job = await one<{ status: string; progress: number; currently_working_on: string }>('status', sql, [req.params.id, tenantId]);
  if (job === undefined) return void res.status(404).json({ detail: 'Job not found.' });
  const links = job.status === 'completed' ? { result_url: `/api/jobs/news/${req.params.id}/result` } : {};
  res.json({ job_id: req.params.id, ...job, ...links });
});

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  if (typeof address === 'object' && address !== null) process.stdout.write(`listening on http://127.0.0.1:${address.port}\n`);
});
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => void pool.end());
});
