import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { startCanary, startFakeCustomerApi, testCertificate, type Canary, type FakeCustomerApi } from '@fin/customer-tools/testing';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../src/browser';
import { sharedEnv, startSystem, type System } from '../src/system';

/**
 * The web portal in a real headless Chromium (Debian's package, installed by scripts/ensure-chromium.sh), through
 * the gateway, against a portal process whose test configuration allows loopback targets so a fake customer API
 * on 127.0.0.1 (HTTPS, a self-signed certificate trusted through NODE_EXTRA_CA_CERTS) can stand in for a real one.
 * Screenshots of every page go to services/portal/test/screenshots/ (git-ignored), or SCREENSHOTS_DIR.
 */
const SCREENSHOTS = process.env.SCREENSHOTS_DIR ?? path.resolve(__dirname, '../../services/portal/test/screenshots');

describe('the portal in a browser', () => {
  let db: TestDatabase;
  let system: System;
  let api: FakeCustomerApi;
  let canary: Canary;
  let browser: Browser;
  let page: Page;
  let apiKey: string;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    db = await createTestDatabase();
    api = await startFakeCustomerApi();
    canary = await startCanary();
    const env = sharedEnv({
      databaseUrl: db.url,
      anthropicUrl: 'http://127.0.0.1:9',
      finnhubUrl: 'http://127.0.0.1:9',
      finnhubToken: 'unused-token',
    });
    system = await startSystem(
      env,
      {},
      {
        products: ['portal'],
        productEnv: {
          portal: {
            CUSTOMER_TOOLS_ALLOW_LOOPBACK: 'true',
            // The test talks plain http to 127.0.0.1, where Chromium does not keep Secure cookies.
            PORTAL_COOKIE_SECURE: 'false',
            NODE_EXTRA_CA_CERTS: (await testCertificate()).certFile,
          },
        },
      },
    );
    apiKey = system.tenantKey('acme');
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
    await Promise.all([api?.close(), canary?.close()]);
    await db?.drop();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  const url = (p: string) => `${system.gatewayUrl}${p}`;

  it('signs in with an API key', async () => {
    await page.goto(url('/portal/tools'));
    await page.waitForURL(/\/portal\/login$/);
    await shot('01-sign-in');
    await page.fill('#api_key', 'fin_wrong');
    await page.click('button[type=submit]');
    await page.getByText('Invalid API key.').waitFor();
    await page.fill('#api_key', apiKey);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/portal\/tools$/);
    await page.getByRole('heading', { name: 'Your tools' }).waitFor();
    await page.getByText('No tools yet.').waitFor();
    await shot('02-tools-empty');
    const cookies = await page.context().cookies();
    expect(cookies.find((cookie) => cookie.name === 'fin_portal_session')).toMatchObject({
      httpOnly: true,
      sameSite: 'Strict',
      path: '/portal',
    });
  });

  it('creates a tool: a bad schema is shown field by field, the fixed one is saved', async () => {
    await page.click('text=New tool');
    await page.waitForURL(/\/portal\/tools\/new$/);
    await page.fill('#name', 'get_positions');
    await page.fill('#description', 'Positions of a client account <b>live</b>.');
    await page.fill('#endpoint', `${api.url}/positions`);
    await page.fill('#input_schema', '{"type": "object", "properties": {"account": {"type": "strng"}}, "required": ["account"]}');
    await page.fill('#headers', 'Authorization: Bearer browser-secret-1');
    await page.click('button:has-text("Create tool")');
    const error = page.locator('#input_schema-error');
    await error.waitFor();
    expect(await error.textContent()).toContain('input_schema.properties.account.type: must be equal to one of the allowed values');
    expect(await page.locator('#input_schema').getAttribute('aria-invalid')).toBe('true');
    await shot('03-new-tool-invalid-schema');

    await page.fill('#input_schema', '{"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]}');
    await page.fill('#headers', 'Authorization: Bearer browser-secret-1');
    await page.click('button:has-text("Create tool")');
    await page.waitForURL(/\/portal\/tools$/);
    const row = page.locator('tr[data-tool="get_positions"]');
    await row.waitFor();
    // What the customer typed is shown as text, never as markup.
    expect(await row.textContent()).toContain('Positions of a client account <b>live</b>.');
    expect(await row.locator('b').count()).toBe(0);
    expect(await page.content()).not.toContain('browser-secret-1');
    await shot('04-tools-list');
  });

  it('tests the tool against the fake API and shows what came back; the call is in the audit', async () => {
    await page.locator('tr[data-tool="get_positions"]').getByText('Test').click();
    await page.waitForURL(/\/test$/);
    await page.fill('#input', '{"account": "A-42"}');
    await page.click('button:has-text("Call it once")');
    await page.locator('#outcome').waitFor();
    expect(await page.locator('#outcome').textContent()).toBe('ok');
    expect(await page.locator('#response-body').textContent()).toContain('"account":"A-42"');
    expect(api.requests.at(-1)?.headers.authorization).toBe('Bearer browser-secret-1');
    await shot('05-tool-test-result');

    await page.click('text=calls');
    await page.waitForURL(/\/calls$/);
    await page.getByText('portal test').first().waitFor();
    await shot('06-tool-calls');
  });

  it('a tool whose API redirects to loopback is refused without connecting', async () => {
    await page.goto(url('/portal/tools/new'));
    await page.fill('#name', 'bouncer');
    await page.fill('#description', 'Redirects.');
    await page.fill('#endpoint', `${api.url}/redirect?to=${encodeURIComponent(`https://127.0.0.1:${canary.port}/`)}`);
    await page.click('button:has-text("Create tool")');
    await page.waitForURL(/\/portal\/tools$/);
    await page.locator('tr[data-tool="bouncer"]').getByText('Test').click();
    await page.click('button:has-text("Call it once")');
    await page.locator('#outcome').waitFor();
    expect(await page.locator('#outcome').textContent()).toBe('redirect_refused');
    expect(canary.connections()).toBe(0);
  });

  it('generates an API key, shows it once, and revokes it', async () => {
    await page.click('nav >> text=API keys');
    await page.waitForURL(/\/portal\/keys$/);
    await page.fill('#key_name', 'reporting');
    await page.click('button:has-text("Generate key")');
    const key = (await page.locator('#new-key').textContent()) ?? '';
    expect(key).toMatch(/^fin_[0-9A-Za-z]{42}$/);
    await shot('07-new-api-key');

    // The new key works against the API at once, and is never shown again.
    const res = await fetch(url('/api/customer-tools/'), { headers: { 'X-API-Key': key } });
    expect(res.status).toBe(200);
    await page.goto(url('/portal/keys'));
    expect(await page.content()).not.toContain(key);
    const row = page.locator(`tr[data-key="${key.slice(0, 10)}"]`);
    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByText('Revoke').click();
    await page.locator(`tr[data-key="${key.slice(0, 10)}"] >> text=revoked`).waitFor();
    await shot('08-api-keys');
  });
});
