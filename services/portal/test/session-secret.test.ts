// The portal's session cookies are signed with a secret of its own (PORTAL_SESSION_SECRET): the portal refuses to
// start without it, and the secret every service holds (INTERNAL_SIGNING_SECRET) cannot make a session.
import { createHmac, randomBytes } from 'node:crypto';
import { ConfigError, parseConfig } from '@fin/config';
import { generateApiKey } from '@fin/api-keys';
import { createPool, type Pool } from '@fin/db';
import { identityKey, serveDefinition, served, signIdentity, type ServedService } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import type { Response } from 'express';
import request from 'supertest';
import { portalConfigShape } from '../src/config';
import { portalService } from '../src/service';
import { SESSION_COOKIE, createSessions } from '../src/session';

const INTERNAL_SIGNING_SECRET = randomBytes(32).toString('hex');
const PORTAL_SESSION_SECRET = randomBytes(32).toString('hex');

function env(databaseUrl: string): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    INTERNAL_SIGNING_SECRET,
    PORTAL_SESSION_SECRET,
    CUSTOMER_TOOLS_ENCRYPTION_KEY: `k1:${randomBytes(32).toString('base64')}`,
    PORT: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'silent',
  };
}

describe("the portal's session secret", () => {
  let db: TestDatabase;
  let pool: Pool;
  let portal: ServedService;
  let keyId: string;
  let tenantId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'portal-session-test', max: 4 });
    portal = served(
      await serveDefinition(portalService, {
        config: parseConfig(portalConfigShape, env(db.url)),
        logger: createLogger({ service: 'portal-test', level: 'silent' }),
        shared: { pool },
      }),
    );
    const { rows: tenants } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('acme') RETURNING id");
    tenantId = tenants[0]!.id;
    const generated = generateApiKey();
    const { rows } = await pool.query<{ id: string }>(
      "INSERT INTO api_keys (tenant_id, display_prefix, key_hash, scopes) VALUES ($1, $2, $3, '{tools}') RETURNING id",
      [tenantId, generated.displayPrefix, generated.hash],
    );
    keyId = rows[0]!.id;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => {
      portal?.server.close(() => resolve());
      portal?.server.closeAllConnections();
    });
    for (const closer of portal?.closers ?? []) await closer.close();
    await pool?.end();
    await db?.drop();
  });

  it('is required: the portal refuses to start without it, naming the variable', () => {
    const { PORTAL_SESSION_SECRET: _omitted, ...without } = env('postgres://h/db');
    let error: unknown;
    try {
      parseConfig(portalConfigShape, without);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues).toContainEqual({ variable: 'PORTAL_SESSION_SECRET', message: 'is required but not set' });
  });

  it('may not be the internal signing secret', () => {
    expect(() => parseConfig(portalConfigShape, { ...env('postgres://h/db'), PORTAL_SESSION_SECRET: INTERNAL_SIGNING_SECRET })).toThrow(
      /PORTAL_SESSION_SECRET: must differ from INTERNAL_SIGNING_SECRET/,
    );
  });

  /** GET /portal/tools through the gateway (signed, anonymous) with this session cookie. */
  const toolsPage = (cookie: string) => {
    const signed = signIdentity({ requestId: 'session-test', caller: null }, identityKey(INTERNAL_SIGNING_SECRET, 'portal'), {
      method: 'GET',
      path: '/portal/tools',
    });
    return request(portal.server).get('/portal/tools').set(signed).set('Cookie', `${SESSION_COOKIE}=${cookie}`);
  };

  /** A session cookie as createSessions issues it. */
  function issuedWith(secret: string): string {
    let value = '';
    const res = { cookie: (_name: string, cookie: string) => void (value = cookie), clearCookie: () => undefined } as unknown as Response;
    createSessions({ secret, secureCookies: true, ttlMs: 60_000 }).issue(res, keyId, tenantId);
    return value;
  }

  it('signs the sessions the portal accepts', async () => {
    const res = await toolsPage(issuedWith(PORTAL_SESSION_SECRET));
    expect(res.status).toBe(200);
    expect(res.text).toContain('Your tools');
  });

  it('refuses a session cookie signed with the internal signing secret, as sessions were signed before', async () => {
    // The earlier scheme: HMAC-SHA256 under HMAC(INTERNAL_SIGNING_SECRET, "fin-portal-session-v1").
    const key = createHmac('sha256', INTERNAL_SIGNING_SECRET).update('fin-portal-session-v1').digest();
    const payload = Buffer.from(JSON.stringify([keyId, tenantId, randomBytes(18).toString('base64url'), Date.now() + 60_000])).toString(
      'base64url',
    );
    const forged = `${payload}.${createHmac('sha256', key).update(`session:${payload}`).digest('base64url')}`;
    const res = await toolsPage(forged);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/portal/login');
    // Nor does the internal secret make a session under today's scheme.
    expect((await toolsPage(issuedWith(INTERNAL_SIGNING_SECRET))).headers.location).toBe('/portal/login');
  });
});
