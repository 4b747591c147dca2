// The workers' ScaledObjects (docs/deployment.md, "What the workers scale on"): each one's query, as the overlay
// renders it, run by PostgreSQL on a migrated database the way KEDA's PostgreSQL scaler runs it. It counts the
// product's jobs that need a worker (pending or running), each tenant's up to the tenant cap, and nothing else:
// not another product's jobs, not finished ones.
import pg from 'pg';
import { DEFAULT_TENANT_CAP, DEFAULT_WORKER_CONCURRENCY } from '@fin/job-kit';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { render, type K8sObject } from './support/kubernetes';

interface ScaledObject extends K8sObject {
  spec: { scaleTargetRef: { name: string }; triggers: { type: string; metadata: Record<string, string> }[] };
}

const scaled = render('k8s/overlays/prod').filter((object): object is ScaledObject => object.kind === 'ScaledObject');
const queryOf = (worker: string) =>
  scaled.find((object) => object.spec.scaleTargetRef.name === worker)!.spec.triggers.find((trigger) => trigger.type === 'postgresql')!
    .metadata.query!;

let database: TestDatabase;
let client: pg.Client;
beforeAll(async () => {
  database = await createTestDatabase();
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
});
afterAll(async () => {
  await client?.end();
  await database?.drop();
});

/** `count` jobs of a tenant, of a type and status. */
async function jobs(tenant: string, type: string, status: string, count: number): Promise<void> {
  await client.query(
    `INSERT INTO jobs (id, tenant_id, type, status, request, result, error)
     SELECT gen_random_uuid(), (SELECT id FROM tenants WHERE name = $1), $2, $3, '{}'::jsonb,
            CASE WHEN $3 = 'completed' THEN '{}'::jsonb END,
            CASE WHEN $3 = 'failed' THEN '{"type": "internal", "detail": "x"}'::jsonb END
       FROM generate_series(1, $4)`,
    [tenant, type, status, count],
  );
}
/** The query's one value, as KEDA reads it: the first column of the first row. */
const measure = async (worker: string) => Number(Object.values((await client.query<Record<string, string>>(queryOf(worker))).rows[0]!)[0]);

test("the base's queries and targets are the workers' defaults: the tenant cap and the jobs one replica holds", () => {
  for (const object of scaled) {
    const [trigger] = object.spec.triggers;
    expect({
      worker: object.spec.scaleTargetRef.name,
      cap: /least\(n, (\d+)\)/.exec(trigger!.metadata.query!)?.[1],
      target: trigger!.metadata.targetQueryValue,
    }).toEqual({
      worker: object.spec.scaleTargetRef.name,
      cap: String(DEFAULT_TENANT_CAP),
      target: String(DEFAULT_WORKER_CONCURRENCY),
    });
  }
});

test('every worker has one PostgreSQL trigger whose query PostgreSQL accepts, 0 with no jobs', async () => {
  expect(scaled.map((object) => object.spec.scaleTargetRef.name).sort()).toEqual(['analysis-worker', 'news-worker', 'stock-report-worker']);
  for (const worker of ['news-worker', 'stock-report-worker', 'analysis-worker']) expect(await measure(worker)).toBe(0);
});

test("counts the product's pending and running jobs, each tenant's up to its cap, and nothing finished or of another product", async () => {
  await client.query(`INSERT INTO tenants (name) VALUES ('flood'), ('small'), ('other')`);
  await jobs('flood', 'news', 'pending', DEFAULT_TENANT_CAP + 250); // a flood: only the cap of it can ever run
  await jobs('small', 'news', 'pending', 3);
  await jobs('small', 'news', 'running', 2);
  await jobs('small', 'news', 'completed', 40);
  await jobs('small', 'news', 'failed', 5);
  await jobs('other', 'stock-report', 'pending', 7);
  expect(await measure('news-worker')).toBe(DEFAULT_TENANT_CAP + 5);
  expect(await measure('stock-report-worker')).toBe(7);
  expect(await measure('analysis-worker')).toBe(0);
});
