import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { testCertificate } from '@fin/customer-tools/testing';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { standardWebhooksProblem, startFakeReceiver, type FakeReceiver } from '@fin/webhooks/testing';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../src/browser';
import { sharedEnv, startSystem, type System } from '../src/system';

/**
 * The portal's webhooks pages in a real headless Chromium, through the gateway: an endpoint registered (a private
 * address shown as a problem, the signing secret shown once), a test event sent by the jobs service to an HTTPS
 * receiver on 127.0.0.1 (test configuration: loopback allowed, its certificate trusted through NODE_EXTRA_CA_CERTS)
 * and verified with the secret the page showed, the attempt on the deliveries page, a redelivery, the endpoint
 * deleted. Screenshots go beside the portal's others (services/portal/test/screenshots/, or SCREENSHOTS_DIR).
 */
const SCREENSHOTS = process.env.SCREENSHOTS_DIR ?? path.resolve(__dirname, '../../services/portal/test/screenshots');

describe('the portal webhooks pages in a browser', () => {
  let db: TestDatabase;
  let system: System;
  let receiver: FakeReceiver;
  let browser: Browser;
  let page: Page;
  let apiKey: string;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    db = await createTestDatabase();
    receiver = await startFakeReceiver();
    const env = {
      ...sharedEnv({
        databaseUrl: db.url,
        anthropicUrl: 'http://127.0.0.1:9',
        finnhubUrl: 'http://127.0.0.1:9',
        finnhubToken: 'unused-token',
      }),
      CUSTOMER_TOOLS_ALLOW_LOOPBACK: 'true',
      NODE_EXTRA_CA_CERTS: (await testCertificate()).certFile,
      WEBHOOK_DISPATCH_INTERVAL_MS: '100',
    };
    // The test talks plain http to 127.0.0.1, where Chromium does not keep Secure cookies.
    system = await startSystem(env, {}, { products: ['portal'], productEnv: { portal: { PORTAL_COOKIE_SECURE: 'false' } } });
    apiKey = system.tenantKey('acme');
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
    await receiver?.close();
    await db?.drop();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  const url = (p: string) => `${system.gatewayUrl}${p}`;

  it('registers an endpoint, sends it a signed test event, shows the attempt, redelivers and deletes it', async () => {
    await page.goto(url('/portal/login'));
    await page.fill('#api_key', apiKey);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/portal\/tools$/);
    await page.click('nav >> text=Webhooks');
    await page.waitForURL(/\/portal\/webhooks$/);
    await page.getByText('No endpoints yet.').waitFor();

    await page.fill('#webhook_url', 'https://169.254.169.254/latest');
    await page.click('button:has-text("Add endpoint")');
    await page.getByText('url: 169.254.169.254 is not a public internet address').waitFor();
    await shot('20-webhooks-private-address');

    await page.fill('#webhook_url', `${receiver.url}/portal-hook`);
    await page.fill('#webhook_description', 'order pipeline');
    await page.click('button:has-text("Add endpoint")');
    const secret = (await page.locator('#new-secret').textContent()) ?? '';
    expect(secret).toMatch(/^whsec_/);
    await shot('21-webhooks-secret-once');
    await page.goto(url('/portal/webhooks'));
    expect(await page.locator('#new-secret').count()).toBe(0);
    expect(await page.content()).not.toContain(secret);

    await page.click('text=Deliveries');
    await page.waitForURL(/\/portal\/webhooks\/[0-9a-f-]+$/);
    await page.getByText('Nothing sent yet.').waitFor();
    await page.click('button:has-text("Send a test event")');
    const [delivered] = await receiver.waitFor(1, 30_000);
    expect(standardWebhooksProblem(secret, delivered?.headers ?? {}, delivered?.body ?? '')).toBeNull();
    await waitFor(
      async () => {
        await page.reload();
        // The receiver has its answer before the attempt is recorded: until then the page lists none, and the
        // next reload is what shows it (a locator would wait on this page for a row that cannot appear).
        const attempt = page.locator('.attempts li').first();
        return (await attempt.count()) > 0 && (await attempt.textContent())?.includes('ok · HTTP 204');
      },
      { timeoutMs: 15_000, intervalMs: 300, what: 'the attempt on the deliveries page' },
    );
    await shot('22-webhook-deliveries');

    await page.click('button:has-text("Redeliver")');
    const both = await receiver.waitFor(2, 30_000);
    expect(both[1]?.headers['webhook-id']).toBe(delivered?.headers['webhook-id']);

    await page.click('text=Back to your webhooks');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('button:has-text("Delete")');
    await page.getByText('No endpoints yet.').waitFor();
  }, 120_000);
});
