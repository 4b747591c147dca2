import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../src/browser';
import { sharedEnv, startSystem, type System } from '../src/system';

/**
 * The API reference at /docs in a real headless Chromium, through the gateway of the multi-process system: the
 * renderer and its configuration come from this origin, the page's strict CSP is never violated, no request
 * leaves the origin, and its "try it" client sends a request with the caller's key to the running API.
 * Screenshots go to services/gateway/test/screenshots/ (git-ignored), or SCREENSHOTS_DIR.
 */
const SCREENSHOTS = process.env.SCREENSHOTS_DIR ?? path.resolve(__dirname, '../../services/gateway/test/screenshots');

describe('the API reference in a browser', () => {
  let db: TestDatabase;
  let system: System;
  let browser: Browser;
  let page: Page;
  let apiKey: string;
  const violations: string[] = [];
  const foreignRequests: string[] = [];

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    db = await createTestDatabase();
    const env = sharedEnv({
      databaseUrl: db.url,
      anthropicUrl: 'http://127.0.0.1:9',
      finnhubUrl: 'http://127.0.0.1:9',
      finnhubToken: 'unused-token',
    });
    system = await startSystem(env, {}, { products: ['portal'] });
    system.admin(['tenants', 'create', 'acme']);
    apiKey = (JSON.parse(system.admin(['keys', 'create', '--tenant', 'acme', '--scopes', 'tools', '--json'])) as { api_key: string })
      .api_key;
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const origin = new URL(system.gatewayUrl).origin;
    page.on('request', (req) => {
      const url = req.url();
      if (!url.startsWith('data:') && !url.startsWith('blob:') && new URL(url).origin !== origin) foreignRequests.push(url);
    });
    // Every CSP violation of the page, reported by the browser itself (before any of the page's scripts run).
    await page.exposeFunction('reportCspViolation', (violation: string) => violations.push(violation));
    await page.addInitScript({
      content:
        "document.addEventListener('securitypolicyviolation', (event) => reportCspViolation(`${event.effectiveDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber}`));",
    });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
    await db?.drop();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) });

  it('renders the document from this origin, without a CSP violation or a request elsewhere', async () => {
    const res = await page.goto(`${system.gatewayUrl}/docs`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self';");
    await page.getByRole('heading', { name: 'Financial Intelligence API' }).waitFor();
    // Routes of every tag and the schemas are rendered.
    for (const tag of ['Products', 'Chat', 'Jobs', 'Customer tools', 'Documentation', 'Models'])
      await page.getByText(tag, { exact: true }).first().waitFor();
    await shot('docs-01-overview');
    expect(violations).toEqual([]);
    expect(foreignRequests).toEqual([]);
  });

  it("sends a request with the key entered once to the running API from the try-it client, and shows the system's answer", async () => {
    // The key, entered once in the page's authentication box, is what the client sends.
    await page.locator('input.scalar-password-input').first().fill(apiKey);
    await page.getByText('Customer tools', { exact: true }).first().click();
    await page.getByText('List customer tools').first().click();
    await page.getByRole('button', { name: /Test Request\s*\(get \/api\/customer-tools\/\)/ }).click();
    const sent = page.waitForResponse((response) => response.url() === `${system.gatewayUrl}/api/customer-tools/`);
    await page.locator('button', { hasText: 'Send Request' }).click();
    const answer = await sent;
    expect(answer.request().method()).toBe('GET');
    expect(answer.request().headers()['x-api-key']).toBe(apiKey);
    expect(answer.status()).toBe(200);
    expect(await answer.json()).toEqual({ tools: [] });
    // What the client shows is that answer.
    await page.getByText('200 OK').first().waitFor();
    await page.getByText('"tools"').first().waitFor();
    await shot('docs-02-try-it');
    // The key lives in the page only: nothing the browser keeps across visits holds it.
    const stored = await page.evaluate('JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie])');
    expect(stored).not.toContain(apiKey);
    expect(violations).toEqual([]);
    expect(foreignRequests).toEqual([]);
  });
});
