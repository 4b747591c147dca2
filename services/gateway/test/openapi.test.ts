// The OpenAPI document the gateway serves is the one generated from the contracts, and it describes exactly
// the routes the gateway serves, with the scopes and limits the gateway enforces.
import { createOpenApiDocument } from '@fin/contracts';
import type express from 'express';
import request from 'supertest';
import { GATEWAY_ROUTES } from '../src/routes';
import { startHarness, type Harness } from './support/harness';

/** Routes the gateway serves that are operational, not part of the API (Kubernetes probes). */
const OPERATIONAL = new Set(['GET /healthz', 'GET /readyz']);

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

  it('describes exactly the routes the gateway serves', () => {
    const served = servedRoutes(h.app).filter((route) => !OPERATIONAL.has(route));
    expect(served.length).toBe(GATEWAY_ROUTES.length);
    expect(new Set(served)).toEqual(new Set(documentedRoutes(document)));
  });

  it('states the scope and the limit the gateway enforces on each route', () => {
    for (const route of GATEWAY_ROUTES) {
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
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('lists every route with its summary, is self-contained and its links resolve', async () => {
    const res = await request(h.app)
      .get('/docs')
      .expect(200)
      .expect('Content-Type', /text\/html/);
    expect(res.headers['content-security-policy']).toBe("default-src 'none'; style-src 'unsafe-inline'");
    const html = res.text;
    for (const route of GATEWAY_ROUTES) {
      expect(html).toContain(`<code>${route.method.toUpperCase()} ${route.path}</code></a> — ${route.summary}`);
    }
    expect(html).toContain('id="schemas-NewsRequest"');
    expect(html).not.toMatch(/<script|\ssrc=|href="https?:/);
    const ids = new Set([...html.matchAll(/id="([^"]+)"/g)].map((match) => match[1]));
    const targets = [...html.matchAll(/href="#([^"]+)"/g)].map((match) => match[1]);
    expect(targets.length).toBeGreaterThan(GATEWAY_ROUTES.length);
    expect(targets.filter((target) => !ids.has(target))).toEqual([]);
  });
});
