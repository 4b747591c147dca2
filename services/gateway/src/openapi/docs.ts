// GET /docs: the OpenAPI document rendered by Scalar's API reference, with its "try it" client sending requests
// to this gateway. Everything comes from this origin: the renderer's browser bundle (read from the installed
// @scalar/api-reference package), the page's configuration (a script of its own: the page has no inline script)
// and the document (/api/openapi.json). The renderer's telemetry, proxy, fonts, AI agent and MCP features are
// off, so nothing leaves the origin. Both scripts are served under names holding their content's hash, cached
// for a year; the page itself is not cached, so a new version is picked up on the next visit.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { RequestHandler } from 'express';

export const DOCS_ASSETS_PATH = '/docs/assets/:file';

/**
 * The page's policy. Scalar injects its stylesheet as a <style> element and sets inline style attributes, hence
 * style-src 'unsafe-inline'; it needs nothing else beyond this origin (e2e/test/docs-browser.test.ts asserts no
 * violation). Images: the renderer's icons are data: URIs.
 */
export const DOCS_CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const IMMUTABLE = 'public, max-age=31536000, immutable';

/** Scalar's configuration: the document of this origin, requests to this origin, nothing sent anywhere else. */
const CONFIGURATION = {
  url: '/api/openapi.json',
  // No fonts from Scalar's CDN: the system's fonts.
  withDefaultFonts: false,
  telemetry: false,
  // Opening the request in Scalar's hosted client would send the document to client.scalar.com.
  hideClientButton: true,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: 'never',
  // The key is entered once per visit and kept in memory only: never written to the browser's storage.
  persistAuth: false,
  authentication: { preferredSecurityScheme: 'ApiKey' },
  documentDownloadType: 'json',
  hideModels: false,
};

interface Asset {
  name: string;
  body: Buffer;
  /** Compressed on first use (the renderer: 4 MB → 1 MB), not when the gateway starts. */
  gzipped: () => Buffer;
}

function asset(stem: string, body: Buffer): Asset {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  let gzipped: Buffer | undefined;
  return { name: `${stem}-${hash}.js`, body, gzipped: () => (gzipped ??= gzipSync(body)) };
}

/** The installed renderer's standalone browser bundle (one file, no chunks to load) and its version. */
function scalarBundle(): { version: string; body: Buffer } {
  const entry = require.resolve('@scalar/api-reference');
  const packageDir = path.resolve(path.dirname(entry), '..');
  const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { version: string };
  return { version: manifest.version, body: readFileSync(path.join(packageDir, 'dist/browser/standalone.js')) };
}

const escapeHtml = (value: string) =>
  value.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] ?? char);

export interface DocsHandlers {
  page: RequestHandler;
  assets: RequestHandler;
}

/** The /docs page and its assets. Reads the bundle once, when the app is made. */
export function docsHandlers(title: string): DocsHandlers {
  const scalar = scalarBundle();
  const renderer = asset(`scalar-${scalar.version}`, scalar.body);
  const configuration = asset(
    'docs',
    Buffer.from(
      [
        "'use strict';",
        // Before the bundle runs: its zod must not probe for eval (the page's policy forbids it; it validates without).
        'globalThis.__zod_globalConfig = { jitless: true };',
        "document.addEventListener('DOMContentLoaded', () => {",
        `  globalThis.Scalar.createApiReference('#docs', ${JSON.stringify(CONFIGURATION)});`,
        '});',
        '',
      ].join('\n'),
    ),
  );
  const assets = new Map([renderer, configuration].map((file) => [file.name, file]));
  const html =
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeHtml(title)}</title></head><body><div id="docs"></div>` +
    `<script src="/docs/assets/${configuration.name}"></script><script src="/docs/assets/${renderer.name}"></script></body></html>\n`;

  const securityHeaders = {
    'Content-Security-Policy': DOCS_CONTENT_SECURITY_POLICY,
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Opener-Policy': 'same-origin',
  };

  return {
    page: (_req, res) => {
      res
        .set({ ...securityHeaders, 'Cache-Control': 'no-cache' })
        .type('html')
        .send(html);
    },
    assets: (req, res, next) => {
      const file = assets.get(String(req.params.file));
      if (file === undefined) {
        next();
        return;
      }
      const gzip = req.acceptsEncodings('gzip', 'identity') === 'gzip';
      res.set({
        ...securityHeaders,
        'Content-Type': 'text/javascript; charset=utf-8',
        'Cache-Control': IMMUTABLE,
        'Cross-Origin-Resource-Policy': 'same-origin',
        Vary: 'Accept-Encoding',
        ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
      });
      res.send(gzip ? file.gzipped() : file.body);
    },
  };
}
