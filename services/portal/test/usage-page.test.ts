// The portal's usage page: an account's model usage per UTC day and product, its own only.
import { Browser } from './support/browser';
import { startHarness, type Harness } from './support/harness';

describe('portal usage page', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });

  afterAll(async () => {
    await h?.close();
  });

  const record = (tenantId: string, daysAgo: number, product: string, outputTokens: number) =>
    h.pool.query(
      `INSERT INTO usage_daily (tenant_id, day, product, runs, failed_runs, model_calls, input_tokens, cache_creation_input_tokens,
                                cache_read_input_tokens, output_tokens, web_searches)
       VALUES ($1, (now() AT TIME ZONE 'UTC')::date - $2::int, $3, 3, 1, 7, 12345, 2000, 98765, $4, 2)`,
      [tenantId, daysAgo, product, outputTokens],
    );

  it("shows the account's usage of the last 30 days per day and product, newest first, and nothing of another account", async () => {
    const tenantId = await h.tenant('usage-acme');
    const other = await h.tenant('usage-globex');
    await record(tenantId, 0, 'stock-report', 4321);
    await record(tenantId, 1, 'chat', 555);
    await record(tenantId, 45, 'news', 999_001);
    await record(other, 0, 'news', 777_777);

    const browser = new Browser(h);
    expect((await browser.go('get', '/portal/usage')).status).not.toBe(200);
    expect((await browser.signIn((await h.key(tenantId)).apiKey)).status).toBe(303);
    const page = await browser.go('get', '/portal/usage');
    expect(page.status).toBe(200);
    expect(page.text).toContain('aria-current="page">Usage</a>');
    const rows = [...page.text.matchAll(/<tr><td>(\d{4}-\d{2}-\d{2})<\/td><td>([a-z-]+)<\/td>(.*?)<\/tr>/g)].map((m) => [m[2], m[3]]);
    expect(rows).toEqual([
      ['stock-report', '<td>3</td><td>1</td><td>7</td><td>12,345</td><td>2,000</td><td>98,765</td><td>4,321</td><td>2</td>'],
      ['chat', '<td>3</td><td>1</td><td>7</td><td>12,345</td><td>2,000</td><td>98,765</td><td>555</td><td>2</td>'],
    ]);
    const today = new Date().toISOString().slice(0, 10);
    expect(page.text).toContain(`<td>${today}</td><td>stock-report</td>`);
    expect(page.text).not.toContain('999,001');
    expect(page.text).not.toContain('777,777');
  });

  it('says when there is no usage yet', async () => {
    const tenantId = await h.tenant('usage-new');
    const browser = new Browser(h);
    await browser.signIn((await h.key(tenantId)).apiKey);
    expect((await browser.go('get', '/portal/usage')).text).toContain('No model usage in the last 30 days.');
  });
});
