// The OpenAPI document the gateway serves is the one generated from the contracts, and it describes exactly
// the routes the gateway serves, with the scopes and limits the gateway enforces.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createOpenApiDocument } from '@fin/contracts';
import type express from 'express';
import request from 'supertest';
import { DOCS_CONTENT_SECURITY_POLICY } from '../src/openapi/docs';
import { GATEWAY_ROUTES } from '../src/routes';
import { startHarness, type Harness } from './support/harness';

/** Routes the gateway serves that are not part of the API: Kubernetes probes, the docs page's scripts. */
const OPERATIONAL = new Set(['GET /healthz', 'GET /readyz', 'GET /docs/assets/{file}']);

type Operation = {
  'x-required-scope'?: unknown;
  'x-rate-limit'?: unknown;
  responses: Record<string, { $ref?: string; headers?: Record<string, unknown> }>;
};
type Document = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { responses: Record<string, { headers?: Record<string, unknown> }> };
};

/** "METHOD /path/{param}" for every route registered on the app, read from express's router. */
function servedRoutes(app: express.Express): string[] {
  const served: string[] = [];
  for (const layer of app.router.stack) {
    if (layer.route === undefined) continue;
    const path = layer.route.path.replace(/:(\w+)/g, '{$1}');
    for (const method of new Set(layer.route.stack.map((inner) => inner.method.toUpperCase()))) served.push(`${method} ${path}`);
  }
  return served;
}

function documentedRoutes(document: Document): string[] {
  return Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
}

describe('OpenAPI document', () => {
  let h: Harness;
  let document: Document;
  beforeAll(async () => {
    h = await startHarness();
    document = (
      await request(h.app)
        .get('/api/openapi.json')
        .expect(200)
        .expect('Content-Type', /application\/json/)
    ).body as Document;
  });
  afterAll(async () => {
    await h.close();
  });

  it('is served without an API key and is the document generated from the contracts', () => {
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document).toEqual(JSON.parse(JSON.stringify(createOpenApiDocument())));
  });

  /** The routes that offer an operation: all but GET /mcp, which is routed only to answer 405 (not documented). */
  const offered = GATEWAY_ROUTES.filter((route) => route.documented !== false);

  it('describes exactly the routes the gateway serves, but GET /mcp, which answers only 405', () => {
    const served = servedRoutes(h.app).filter((route) => !OPERATIONAL.has(route));
    expect(served.length).toBe(GATEWAY_ROUTES.length);
    expect(new Set(served)).toEqual(new Set([...documentedRoutes(document), 'GET /mcp']));
    expect(GATEWAY_ROUTES.filter((route) => route.documented === false).map((route) => route.id)).toEqual(['mcpStream']);
    expect(document.paths['/mcp']?.get).toBeUndefined();
  });

  it('states the scope and the limit the gateway enforces on each route', () => {
    for (const route of offered) {
      const operation = document.paths[route.path]?.[route.method];
      expect(operation).toBeDefined();
      expect(operation?.['x-required-scope']).toBe(route.scope);
      const perMinute = route.target.kind === 'proxy' && route.target.limit !== null;
      const concurrent = route.target.kind === 'proxy' && route.target.upstream === 'chat';
      expect(operation?.['x-rate-limit']).toBe(concurrent ? 'concurrent_streams' : perMinute ? 'per_minute' : null);
      for (const [status, response] of Object.entries(operation?.responses ?? {})) {
        const headers =
          response.$ref === undefined ? response.headers : document.components.responses[response.$ref.split('/').pop() ?? '']?.headers;
        // Chat is counted per minute too (its successes carry the headers); its 429 is either limit's, documented once.
        const limited = status.startsWith('2') || (status === '429' && !concurrent);
        expect([route.id, status, Object.keys(headers ?? {}).includes('X-RateLimit-Limit')]).toEqual([
          route.id,
          status,
          perMinute && limited,
        ]);
      }
      expect(Object.keys(operation?.responses ?? {}).includes('429')).toBe(perMinute || concurrent);
    }
  });
});

describe('docs page', () => {
  let h: Harness;
  let html: string;
  let csp: string | undefined;
  let scripts: string[];
  beforeAll(async () => {
    h = await startHarness();
    const res = await request(h.app)
      .get('/docs')
      .expect(200)
      .expect('Content-Type', /text\/html/);
    html = res.text;
    csp = res.headers['content-security-policy'];
    scripts = [...html.matchAll(/<script src="([^"]+)"><\/script>/g)].map((match) => match[1] ?? '');
  });
  afterAll(async () => {
    await h.close();
  });

  it('is served with a policy allowing scripts, requests and fonts from this origin only, and no inline script', () => {
    expect(csp).toBe(DOCS_CONTENT_SECURITY_POLICY);
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("connect-src 'self';");
    expect(csp).not.toContain('unsafe-eval');
    // Every <script> loads a file of this origin: none has inline code.
    expect(html.match(/<script/g)).toHaveLength(2);
    expect(scripts).toHaveLength(2);
    for (const src of scripts) expect(src).toMatch(/^\/docs\/assets\/[\w.-]+-[0-9a-f]{16}\.js$/);
    expect(html).not.toMatch(/https?:\/\//);
  });

  it("serves the installed renderer's bundle and the page's configuration under hashed names, cached for a year", async () => {
    const scalarVersion = (
      JSON.parse(readFileSync(path.join(path.dirname(require.resolve('@scalar/api-reference')), '../package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
    const bundle = scripts.find((src) => src.includes('/scalar-'));
    expect(bundle).toContain(`/scalar-${scalarVersion}-`);
    for (const src of scripts) {
      const res = await request(h.app).get(src).set('Accept-Encoding', 'identity').expect(200);
      expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.headers['content-encoding']).toBeUndefined();
      const body = Buffer.from(res.text);
      expect(src).toContain(createHash('sha256').update(body).digest('hex').slice(0, 16));
    }
    const configuration = await request(h.app)
      .get(scripts[0] ?? '')
      .expect(200);
    // Scalar reads the document of this origin and sends nothing anywhere else.
    expect(configuration.text).toContain('"url":"/api/openapi.json"');
    expect(configuration.text).toContain('"telemetry":false');
    expect(configuration.text).toContain('"withDefaultFonts":false');
    expect(configuration.text).toContain('"hideClientButton":true');
    expect(configuration.text).not.toMatch(/https?:\/\/|proxy/i);
  });

  it('sends the bundle gzipped to a client that accepts it', async () => {
    const src = scripts.find((candidate) => candidate.includes('/scalar-')) ?? '';
    const res = await request(h.app)
      .get(src)
      .set('Accept-Encoding', 'gzip')
      .buffer(true)
      .parse((response, done) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          done(null, Buffer.concat(chunks));
        });
      });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.headers.vary).toContain('Accept-Encoding');
    const size = Number(res.headers['content-length']);
    expect(size).toBeGreaterThan(0);
    expect(size).toBeLessThan(2 * 1024 * 1024);
  });

  it('answers 404 with the error body for an asset it does not have', async () => {
    const res = await request(h.app).get('/docs/assets/scalar-0.0.0-0000000000000000.js').expect(404);
    expect(res.body).toMatchObject({ status_code: 404, type: 'not_found' });
  });
});
