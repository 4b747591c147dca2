// The web portal at /portal: sign in with an API key, manage the tenant's customer tools (create, edit, enable or
// disable, test, delete, read the audit) and API keys (generate, shown once; revoke). Server-rendered HTML with a
// small script for niceties; every page works without it.
//
// Every response gets a strict Content-Security-Policy (scripts and styles from this origin only, no inline
// script, no framing), no caching, and no referrer. Every POST is refused when it comes from another site, and
// needs the session's CSRF token (or, for sign-in, the double-submit token).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { accountLimit } from '@fin/api-keys';
import { API_SCOPES, PORTAL_PAGES, PortalForm } from '@fin/contracts';
import { CustomerToolError, listCalls, type CustomerToolRuntime, type ToolStore } from '@fin/customer-tools';
import type { Pool } from '@fin/db';
import { checkBodyDigest, hasIdentity, identityKey, loggerOf, route, tooManyRequests, verifyIdentity } from '@fin/http';
import type { Logger } from '@fin/log';
import type { WebhookStore } from '@fin/webhooks';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { MAX_ACTIVE_KEYS_PER_TENANT, accountOf, createTenantKey, listKeys, revokeTenantKey, signIn, type Account } from '../accounts';
import type { Signed } from './signed';
import { isCrossSite, type Sessions } from '../session';
import { clientAddressOf, type PortalThrottle, type Refusal, type ThrottledAction } from '../throttle';
import { html, layout, problemList, type Html } from './html';
import { mountWebhookPages } from './webhook-pages';
import { EMPTY_VALUES, addDetail, addProblem, parseToolForm, toolForm, valuesOf, type FieldProblems } from './tool-form';

const STATIC_DIR = path.resolve(__dirname, '../../static');
const STATIC_FILES: Record<string, string> = { 'portal.js': 'text/javascript; charset=utf-8', 'portal.css': 'text/css; charset=utf-8' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TEST_BODY_SHOWN = 16 * 1024;

export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export interface PortalDeps {
  pool: Pool;
  store: ToolStore;
  /** Webhook endpoints and deliveries (the API and the webhooks pages). */
  webhooks: WebhookStore;
  runtime: CustomerToolRuntime;
  sessions: Sessions;
  signingSecret: string;
  logger: Logger;
  /** Sign-in and test-call limits per client address and per tenant. */
  throttle: PortalThrottle;
  /** Proxies in front of the portal that append to X-Forwarded-For (PORTAL_CLIENT_ADDRESS_HOPS). */
  clientAddressHops: number;
  /** Lifetime of keys generated here (PORTAL_KEY_TTL_DAYS). */
  keyTtlDays: number;
}

const signedOf = (res: Response): Signed => res.locals.portal as Signed;

function securityHeaders(): RequestHandler {
  return (_req, res, next) => {
    res.set({
      'Content-Security-Policy': CONTENT_SECURITY_POLICY,
      'X-Frame-Options': 'DENY',
      'X-Content-Type-Options': 'nosniff',
      // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on form posts, which the cross-site check refuses.
      'Referrer-Policy': 'same-origin',
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Resource-Policy': 'same-origin',
      'Permissions-Policy': 'camera=(), microphone=(), geolocation=()',
      // Pages may show secrets (a new key, tool answers): never stored. Static assets override this.
      'Cache-Control': 'no-store',
    });
    next();
  };
}

/** Pages may show secrets (a new key, tool answers): never stored by a browser or a proxy. */
function noStore(res: Response): void {
  res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
}

/** One row of usage_daily as the usage page reads it (the bigint counters as text). */
interface UsageRow {
  day: string;
  product: string;
  runs: number;
  failed_runs: number;
  model_calls: string;
  input_tokens: string;
  cache_creation_input_tokens: string;
  cache_read_input_tokens: string;
  output_tokens: string;
  web_searches: string;
}

function page(res: Response, status: number, options: Parameters<typeof layout>[0]): void {
  noStore(res);
  res.status(status).type('html').send(layout(options));
}

/** A form field sent once; '' when it is absent or its name repeated. */
const formText = (value: string | string[] | undefined): string => (typeof value === 'string' ? value : '');

export function portalRoutes(deps: PortalDeps): express.Router {
  const { pool, store, runtime, sessions, logger, throttle } = deps;
  const router = express.Router();
  const statics = Object.fromEntries(Object.keys(STATIC_FILES).map((name) => [name, readFileSync(path.join(STATIC_DIR, name))]));

  router.use(securityHeaders());
  router.get('/static/:file', (req, res, next) => {
    const file = req.params.file;
    const body = statics[file];
    if (body === undefined) {
      next();
      return;
    }
    res.set({ 'Content-Type': STATIC_FILES[file], 'Cache-Control': 'public, max-age=300' }).send(body);
  });

  // Everything else came through the gateway (anonymous, signed): direct requests are refused. In one process the
  // gateway has vouched for the request already (inProcessUpstream): there is no signature to check.
  const verify = verifyIdentity(identityKey(deps.signingSecret, 'portal'), { allowAnonymous: true, logger });
  router.use((req, res, next) => {
    if (hasIdentity(res)) next();
    else verify(req, res, next);
  });
  // The form's bytes are the ones the gateway signed (checkBodyDigest), or the request is refused.
  router.use(express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 100, verify: checkBodyDigest }));
  router.post(/.*/, (req, res, next) => {
    if (isCrossSite(req)) {
      loggerOf(res, logger).warn(
        { origin: req.headers.origin, site: req.headers['sec-fetch-site'] },
        'refused a cross-site portal form post',
      );
      page(res, 403, {
        title: 'Request refused',
        body: html`<p>This form was sent from another site and was refused.</p><p><a href="/portal/tools">Back to the portal</a></p>`,
      });
      return;
    }
    next();
  });

  const requireSession: RequestHandler = async (req, res, next) => {
    try {
      const session = sessions.read(req);
      const account = session ? await accountOf(pool, session.keyId, session.tenantId) : null;
      if (session === null || account === null) {
        if (session !== null) sessions.clear(res);
        noStore(res);
        res.redirect(303, '/portal/login');
        return;
      }
      res.locals.portal = { session, account, csrf: sessions.csrfToken(session) } satisfies Signed;
      if (req.method === 'POST' && !sessions.checkCsrf(session, PortalForm.parse(req.body).csrf)) {
        page(res, 403, {
          title: 'Request refused',
          body: html`<p>The form was out of date or not sent by this portal. Go back, reload the page and try again.</p><p><a href="/portal/tools">Back to your tools</a></p>`,
        });
        return;
      }
      next();
    } catch (error) {
      next(error);
    }
  };

  /** The pages of a signed-in account: the session (and, on a POST, its CSRF token) is checked first. */
  const signedIn = { before: [requireSession] };

  /**
   * Counts an attempt; over a limit, a 429 with Retry-After: a browser gets a page saying so (and false), any other
   * client the error body every API answers with (thrown, for the service's error translator).
   */
  const admitted = async (
    req: Request,
    res: Response,
    action: ThrottledAction,
    who: { client?: boolean; tenantId?: string },
  ): Promise<boolean> => {
    const refusal: Refusal | null = await throttle.hit(action, {
      ...(who.client === true ? { client: clientAddressOf(req, deps.clientAddressHops) } : {}),
      ...(who.tenantId === undefined ? {} : { tenantId: who.tenantId }),
    });
    if (refusal === null) return true;
    refuse(req, res, refusal, { action, tenantId: who.tenantId });
    return false;
  };

  /** Over a limit: a 429 with Retry-After, as a page for a browser and as the error body for any other client. */
  const refuse = (req: Request, res: Response, refusal: Refusal, fields: Record<string, unknown>): void => {
    loggerOf(res, logger).warn(fields, 'portal attempt refused: over its limit');
    if (req.accepts(['json', 'html']) !== 'html') throw tooManyRequests(refusal.detail, refusal.retryAfterSeconds);
    res.set('Retry-After', String(refusal.retryAfterSeconds));
    page(res, 429, {
      title: 'Too many attempts',
      body: html`<p>${refusal.detail}</p><p><a href="/portal/tools">Back to the portal</a></p>`,
    });
  };

  /**
   * Counts a webhook delivery queued from a page (a test event, a redelivery) against the account's `webhooks`
   * limit, the API's own counter: false (and the 429 sent) when the account is over it.
   */
  const withinWebhooksLimit = async (req: Request, res: Response, account: Account): Promise<boolean> => {
    const refusal = await throttle.hitAccountLimit('webhooks', account.tenantId, accountLimit('webhooks', account.limitOverrides));
    if (refusal === null) return true;
    refuse(req, res, refusal, { limit: 'webhooks', tenantId: account.tenantId });
    return false;
  };

  const shell = (res: Response, title: string, body: Html, current: 'tools' | 'keys' | 'webhooks' | 'usage' = 'tools', status = 200) => {
    const { account, csrf } = signedOf(res);
    page(res, status, { title, account: { tenantName: account.tenantName, csrf }, current, body });
  };

  const notFound = (res: Response) =>
    shell(
      res,
      'Not found',
      html`<p>There is no such tool in this account.</p><p><a href="/portal/tools">Back to your tools</a></p>`,
      'tools',
      404,
    );

  const toolId = (id: string): string | null => (UUID.test(id) ? id.toLowerCase() : null);

  // ---- Sign-in ----

  const loginPage = (req: Request, res: Response, problems: string[] = [], status = 200) => {
    const token = sessions.loginToken(req, res);
    page(res, status, {
      title: 'Sign in',
      body: html`${problemList(problems)}
<form method="post" action="/portal/login" class="narrow">
  <input type="hidden" name="csrf" value="${token}">
  <label for="api_key">API key <small>a key with the tools scope, e.g. from your account manager</small></label>
  <input id="api_key" name="api_key" type="password" autocomplete="off" spellcheck="false" required ${problems.length > 0 ? html`aria-invalid="true"` : ''}>
  <p><button type="submit">Sign in</button></p>
</form>`,
    });
  };

  route(router, PORTAL_PAGES.home, (_input, { res }) => res.redirect(303, '/portal/tools'));
  route(router, PORTAL_PAGES.signInPage, (_input, { req, res }) => {
    if (sessions.read(req) !== null) {
      res.redirect(303, '/portal/tools');
      return;
    }
    loginPage(req, res);
  });
  route(router, PORTAL_PAGES.signIn, async ({ body }, { req, res }) => {
    if (!sessions.checkLoginToken(req, formText(body.csrf))) {
      loginPage(req, res, ['The sign-in form was out of date. Please try again.'], 403);
      return;
    }
    // Counted before the key is looked up, so a flood of attempts costs no database lookups once over the limit.
    if (!(await admitted(req, res, 'sign_in', { client: true }))) return;
    const result = await signIn(pool, formText(body.api_key));
    if (!result.ok) {
      loggerOf(res, logger).warn({ reason: result.reason }, 'portal sign-in refused');
      loginPage(
        req,
        res,
        [result.reason === 'scope' ? 'This API key does not have the tools scope, which the portal needs.' : 'Invalid API key.'],
        200,
      );
      return;
    }
    if (!(await admitted(req, res, 'sign_in', { tenantId: result.account.tenantId }))) return;
    sessions.issue(res, result.account.keyId, result.account.tenantId);
    loggerOf(res, logger).info({ tenantId: result.account.tenantId, keyId: result.account.keyId }, 'portal sign-in');
    noStore(res);
    res.redirect(303, '/portal/tools');
  });
  route(
    router,
    PORTAL_PAGES.signOut,
    (_input, { res }) => {
      sessions.clear(res);
      noStore(res);
      res.redirect(303, '/portal/login');
    },
    signedIn,
  );

  // ---- Tools ----

  /** The tools page; `problems`: why the last action (an enable) was refused. */
  const toolsPage = async (res: Response, problems: string[] = []) => {
    const { account, csrf } = signedOf(res);
    const tools = await store.list(account.tenantId);
    const rows = tools.map(
      (tool) => html`<tr data-tool="${tool.name}">
  <td><strong>${tool.name}</strong><div class="muted">${tool.description}</div></td>
  <td><code>${tool.method} ${tool.endpoint}</code>${tool.headerNames.length > 0 ? html`<div class="muted">headers: ${tool.headerNames.join(', ')}</div>` : ''}</td>
  <td>${tool.products.join(', ')}</td>
  <td><span class="badge ${tool.enabled ? 'on' : 'off'}">${tool.enabled ? 'enabled' : 'disabled'}</span>${tool.disabledReason === null ? '' : html`<div class="muted disabled-reason">${tool.disabledReason}</div>`}</td>
  <td class="actions">
    <a href="/portal/tools/${tool.id}/edit">Edit</a>
    <a href="/portal/tools/${tool.id}/test">Test</a>
    <a href="/portal/tools/${tool.id}/calls">Calls</a>
    <form method="post" action="/portal/tools/${tool.id}/enabled" class="inline"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="enabled" value="${tool.enabled ? 'off' : 'on'}"><button type="submit" class="link">${tool.enabled ? 'Disable' : 'Enable'}</button></form>
    <form method="post" action="/portal/tools/${tool.id}/delete" class="inline" data-confirm="Delete the tool ${tool.name}? The AI stops using it at once."><input type="hidden" name="csrf" value="${csrf}"><button type="submit" class="link danger">Delete</button></form>
  </td>
</tr>`,
    );
    shell(
      res,
      'Your tools',
      html`${problemList(problems)}<p>External APIs the AI may call while it analyses for you. <a href="/portal/tools/new" class="button">New tool</a></p>
${tools.length === 0 ? html`<p class="empty">No tools yet.</p>` : html`<table><thead><tr><th>Tool</th><th>Endpoint</th><th>Products</th><th>Status</th><th></th></tr></thead><tbody>${rows}</tbody></table>`}`,
    );
  };

  route(router, PORTAL_PAGES.tools, (_input, { res }) => toolsPage(res), signedIn);

  route(
    router,
    PORTAL_PAGES.newTool,
    (_input, { res }) => {
      shell(
        res,
        'New tool',
        toolForm({ action: '/portal/tools', values: EMPTY_VALUES, problems: new Map(), csrf: signedOf(res).csrf, editing: false }),
      );
    },
    signedIn,
  );

  /** Re-renders the form with its problems (200: the page is the answer to the form, as browsers expect). */
  const formAgain = (
    res: Response,
    title: string,
    action: string,
    values: ReturnType<typeof parseToolForm>['values'],
    problems: FieldProblems,
    editing: boolean,
  ) => shell(res, title, toolForm({ action, values, problems, csrf: signedOf(res).csrf, editing }));

  const storeProblem = (error: unknown, problems: FieldProblems): boolean => {
    if (!(error instanceof CustomerToolError)) return false;
    // The API's wording asks for `headers` in JSON; the form has a box and a checkbox for it.
    if (error.reason === 'origin_changed') {
      addProblem(
        problems,
        'headers',
        'headers: the endpoint moves to another origin, and stored header values are never sent there: type the headers again, or tick "Remove all stored headers"',
      );
    } else {
      addDetail(problems, error.detail);
    }
    return true;
  };

  route(
    router,
    PORTAL_PAGES.createTool,
    async ({ body }, { res }) => {
      const { values, request, problems } = parseToolForm(body, { editing: false });
      if (request !== undefined) {
        try {
          await store.create(signedOf(res).account.tenantId, request);
          noStore(res);
          res.redirect(303, '/portal/tools');
          return;
        } catch (error) {
          if (!storeProblem(error, problems)) throw error;
        }
      }
      formAgain(res, 'New tool', '/portal/tools', values, problems, false);
    },
    signedIn,
  );

  route(
    router,
    PORTAL_PAGES.editTool,
    async ({ params }, { res }) => {
      const id = toolId(params.id);
      const tool = id === null ? null : await store.get(signedOf(res).account.tenantId, id);
      if (tool === null) {
        notFound(res);
        return;
      }
      shell(
        res,
        `Edit ${tool.name}`,
        html`${tool.disabledReason === null ? '' : html`<p class="note disabled-reason">${tool.disabledReason}</p>`}${toolForm({
          action: `/portal/tools/${tool.id}`,
          values: valuesOf(tool),
          problems: new Map(),
          csrf: signedOf(res).csrf,
          editing: true,
        })}`,
      );
    },
    signedIn,
  );

  route(
    router,
    PORTAL_PAGES.updateTool,
    async ({ params, body }, { res }) => {
      const id = toolId(params.id);
      const tenantId = signedOf(res).account.tenantId;
      const existing = id === null ? null : await store.get(tenantId, id);
      if (existing === null) {
        notFound(res);
        return;
      }
      const { values, request, problems } = parseToolForm(body, { editing: true });
      if (values.headerNames.length === 0 && formText(body.headers).trim() === '' && formText(body.clear_headers) !== 'on')
        values.headerNames = existing.headerNames;
      if (request !== undefined) {
        try {
          await store.update(tenantId, existing.id, request);
          noStore(res);
          res.redirect(303, '/portal/tools');
          return;
        } catch (error) {
          if (!storeProblem(error, problems)) throw error;
        }
      }
      formAgain(res, `Edit ${existing.name}`, `/portal/tools/${existing.id}`, values, problems, true);
    },
    signedIn,
  );

  route(
    router,
    PORTAL_PAGES.setToolEnabled,
    async ({ params, body }, { res }) => {
      const id = toolId(params.id);
      let tool;
      try {
        tool = id === null ? null : await store.setEnabled(signedOf(res).account.tenantId, id, formText(body.enabled) === 'on');
      } catch (error) {
        // Enabling a tool under a reserved name: the list again, saying why (200, as for the tool form's problems).
        if (!(error instanceof CustomerToolError)) throw error;
        await toolsPage(res, [error.detail]);
        return;
      }
      if (tool === null) {
        notFound(res);
        return;
      }
      res.redirect(303, '/portal/tools');
    },
    signedIn,
  );

  route(
    router,
    PORTAL_PAGES.deleteTool,
    async ({ params }, { res }) => {
      const id = toolId(params.id);
      if (id === null || !(await store.delete(signedOf(res).account.tenantId, id))) {
        notFound(res);
        return;
      }
      res.redirect(303, '/portal/tools');
    },
    signedIn,
  );

  /** The test form; `input` is the sample sent to run, undefined to show the form with a starting sample. */
  const testPage = async (req: Request, res: Response, toolParam: string, input: string | undefined) => {
    const id = toolId(toolParam);
    const run = input !== undefined;
    const tenantId = signedOf(res).account.tenantId;
    const tool = id === null ? null : await store.get(tenantId, id);
    if (tool === null) {
      notFound(res);
      return;
    }
    const sample = input ?? JSON.stringify(sampleInput(tool.inputSchema), null, 2);
    const problems: string[] = [];
    let outcome: Html = html``;
    if (run) {
      let input: unknown;
      try {
        input = JSON.parse(sample);
      } catch (error) {
        problems.push(`input: is not valid JSON (${error instanceof SyntaxError ? error.message : 'cannot be parsed'})`);
      }
      if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input)))
        problems.push('input: must be a JSON object');
      if (problems.length === 0) {
        if (!(await admitted(req, res, 'test_call', { client: true, tenantId }))) return;
        const tested = await runtime.testCall(tenantId, tool.id, input as Record<string, unknown>);
        if (tested === null) {
          notFound(res);
          return;
        }
        problems.push(...tested.inputProblems);
        const result = tested.result;
        if (result !== null) {
          const shown =
            result.body === null
              ? null
              : result.body.length > TEST_BODY_SHOWN
                ? `${result.body.slice(0, TEST_BODY_SHOWN)}\n… (cut: ${result.responseBytes} bytes in all)`
                : result.body;
          outcome = html`<section class="result" id="result" aria-live="polite">
  <h2>What came back</h2>
  <dl>
    <dt>Outcome</dt><dd><span class="badge ${result.outcome === 'ok' ? 'on' : 'off'}" id="outcome">${result.outcome}</span></dd>
    <dt>HTTP status</dt><dd>${result.httpStatus ?? '—'}</dd>
    <dt>Duration</dt><dd>${result.durationMs} ms</dd>
    <dt>Bytes</dt><dd>${result.responseBytes}</dd>
    ${result.error === null ? '' : html`<dt>Problem</dt><dd>${result.error}</dd>`}
  </dl>
  ${shown === null ? '' : html`<pre class="code" id="response-body">${shown}</pre>`}
</section>`;
        }
      }
    }
    shell(
      res,
      `Test ${tool.name}`,
      html`<p>Calls <code>${tool.method} ${tool.endpoint}</code> once with the input below, exactly as the AI would (public addresses only, no redirects, the tool's ${tool.timeoutMs} ms limit). The call is recorded in the tool's <a href="/portal/tools/${tool.id}/calls">calls</a>.</p>
${problemList(problems)}
<form method="post" action="/portal/tools/${tool.id}/test">
  <input type="hidden" name="csrf" value="${signedOf(res).csrf}">
  <label for="input">Sample input <small>JSON matching the tool's input schema</small></label>
  <textarea id="input" name="input" rows="8" class="code" spellcheck="false" data-json>${sample}</textarea>
  <p><button type="submit">Call it once</button> <a href="/portal/tools">Back to your tools</a></p>
</form>
${outcome}`,
    );
  };

  route(router, PORTAL_PAGES.testToolPage, ({ params }, { req, res }) => testPage(req, res, params.id, undefined), signedIn);
  route(router, PORTAL_PAGES.testTool, ({ params, body }, { req, res }) => testPage(req, res, params.id, formText(body.input)), signedIn);

  route(
    router,
    PORTAL_PAGES.toolCalls,
    async ({ params }, { res }) => {
      const id = toolId(params.id);
      const tenantId = signedOf(res).account.tenantId;
      const tool = id === null ? null : await store.get(tenantId, id);
      if (tool === null) {
        notFound(res);
        return;
      }
      const calls = await listCalls(pool, tenantId, tool.id, 100);
      const rows = calls.map(
        (call) => html`<tr>
  <td>${call.createdAt.toISOString()}</td>
  <td>${call.source === 'portal_test' ? 'portal test' : call.source === 'job' ? html`${call.product} job <code>${call.jobId}</code>` : html`chat <code>${call.conversationId}</code>`}</td>
  <td><span class="badge ${call.outcome === 'ok' ? 'on' : 'off'}">${call.outcome}</span>${call.error === null ? '' : html`<div class="muted">${call.error}</div>`}</td>
  <td>${call.httpStatus ?? '—'}</td><td>${call.durationMs} ms</td><td>${call.responseBytes}</td>
</tr>`,
      );
      shell(
        res,
        `Calls of ${tool.name}`,
        html`<p>The most recent calls the AI (or the test button) made to this tool. Arguments, header values and answers are never recorded.</p>
${calls.length === 0 ? html`<p class="empty">No calls yet.</p>` : html`<table><thead><tr><th>When (UTC)</th><th>Made by</th><th>Outcome</th><th>HTTP</th><th>Duration</th><th>Bytes</th></tr></thead><tbody>${rows}</tbody></table>`}
<p><a href="/portal/tools">Back to your tools</a></p>`,
      );
    },
    signedIn,
  );

  // ---- API keys ----

  const keysPage = async (res: Response, extra: { created?: { apiKey: string; expiresAt: Date }; problems?: string[] } = {}) => {
    const { account, csrf } = signedOf(res);
    const keys = await listKeys(pool, account.tenantId);
    const rows = keys.map(
      (key) => html`<tr data-key="${key.displayPrefix}">
  <td><code>${key.displayPrefix}…</code>${key.id === account.keyId ? html` <span class="badge">this session</span>` : ''}</td>
  <td>${key.name ?? ''}</td><td>${key.scopes.join(', ')}</td>
  <td><span class="badge ${key.status === 'active' ? 'on' : 'off'}">${key.status}</span></td>
  <td>${key.createdAt.toISOString().slice(0, 10)}</td><td>${key.expiresAt?.toISOString().slice(0, 10) ?? 'never'}</td><td>${key.lastUsedAt?.toISOString().slice(0, 16).replace('T', ' ') ?? 'never'}</td>
  <td>${key.status === 'active' ? html`<form method="post" action="/portal/keys/${key.id}/revoke" class="inline" data-confirm="Revoke ${key.displayPrefix}…? Requests with it fail from now on."><input type="hidden" name="csrf" value="${csrf}"><button type="submit" class="link danger">Revoke</button></form>` : ''}</td>
</tr>`,
    );
    const created = extra.created;
    shell(
      res,
      'API keys',
      html`${created === undefined ? '' : html`<section class="new-key" role="status"><h2>Your new API key</h2><p>Copy it now: it is shown only this once, and only its hash is stored. It expires on <time id="new-key-expires" datetime="${created.expiresAt.toISOString()}">${created.expiresAt.toISOString().slice(0, 10)}</time>.</p><p><code id="new-key">${created.apiKey}</code> <button type="button" data-copy="new-key">Copy</button></p></section>`}
${problemList(extra.problems ?? [])}
<form method="post" action="/portal/keys" class="narrow">
  <input type="hidden" name="csrf" value="${csrf}">
  <label for="key_name">Name <small>optional, to tell keys apart</small></label>
  <input id="key_name" name="name" maxlength="200" autocomplete="off">
  <fieldset><legend>Scopes</legend>
  ${API_SCOPES.map((scope) => html`<label class="check"><input type="checkbox" name="scopes" value="${scope}" ${account.scopes.includes(scope) ? html`checked` : html`disabled`}> ${scope}</label>`)}
  </fieldset>
  <p><button type="submit">Generate key</button> <small>Keys generated here expire after ${String(deps.keyTtlDays)} days; an account holds at most ${String(MAX_ACTIVE_KEYS_PER_TENANT)} keys that are neither revoked nor expired.</small></p>
</form>
<table><thead><tr><th>Key</th><th>Name</th><th>Scopes</th><th>Status</th><th>Created</th><th>Expires</th><th>Last used</th><th></th></tr></thead><tbody>${rows}</tbody></table>`,
      'keys',
    );
  };

  route(router, PORTAL_PAGES.keys, (_input, { res }) => keysPage(res), signedIn);

  // The account's model usage per UTC day and product, the last 30 days: what every job attempt (failed ones
  // included) and chat reply recorded when it ended (see docs/products.md, Usage).
  route(
    router,
    PORTAL_PAGES.usage,
    async (_input, { res }) => {
      const { rows } = await pool.query<UsageRow>({
        name: 'portal-usage-by-day',
        text: `SELECT to_char(day, 'YYYY-MM-DD') AS day, product, runs, failed_runs, model_calls::text, input_tokens::text,
                      cache_creation_input_tokens::text, cache_read_input_tokens::text, output_tokens::text, web_searches::text
                 FROM usage_daily
                WHERE tenant_id = $1 AND day > (now() AT TIME ZONE 'UTC')::date - 30
                ORDER BY day DESC, product`,
        values: [signedOf(res).account.tenantId],
      });
      const number = (text: string) => Number(text).toLocaleString('en');
      const body =
        rows.length === 0
          ? html`<p>No model usage in the last 30 days. Jobs and chat replies are counted here when they end; answers served from the cache cost nothing.</p>`
          : html`<p>Model usage of this account per UTC day and product, the last 30 days, in the units the model provider bills. Failed attempts are included (they were billed); answers served from the cache cost nothing.</p>
<table class="usage"><thead><tr><th>Day (UTC)</th><th>Product</th><th>Runs</th><th>Failed</th><th>Model calls</th><th>Input tokens</th><th>Cache writes</th><th>Cache reads</th><th>Output tokens</th><th>Web searches</th></tr></thead>
<tbody>${rows.map(
              (row) =>
                html`<tr><td>${row.day}</td><td>${row.product}</td><td>${number(String(row.runs))}</td><td>${number(String(row.failed_runs))}</td><td>${number(row.model_calls)}</td><td>${number(row.input_tokens)}</td><td>${number(row.cache_creation_input_tokens)}</td><td>${number(row.cache_read_input_tokens)}</td><td>${number(row.output_tokens)}</td><td>${number(row.web_searches)}</td></tr>`,
            )}</tbody></table>`;
      shell(res, 'Usage', body, 'usage');
    },
    signedIn,
  );
  route(
    router,
    PORTAL_PAGES.createKey,
    async ({ body }, { res }) => {
      const raw = body.scopes;
      const scopes = Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : [];
      const result = await createTenantKey(
        pool,
        signedOf(res).account,
        { name: formText(body.name), scopes },
        { ttlDays: deps.keyTtlDays },
      );
      if (!result.ok) return keysPage(res, { problems: [`${result.field}: ${result.message}`] });
      loggerOf(res, logger).info(
        { tenantId: signedOf(res).account.tenantId, keyId: result.id, expiresAt: result.expiresAt },
        'API key generated in the portal',
      );
      await keysPage(res, { created: { apiKey: result.apiKey, expiresAt: result.expiresAt } });
    },
    signedIn,
  );
  route(
    router,
    PORTAL_PAGES.revokeKey,
    async ({ params }, { res }) => {
      const id = params.id;
      const { account } = signedOf(res);
      if (!UUID.test(id) || !(await revokeTenantKey(pool, account.tenantId, id))) {
        shell(
          res,
          'Not found',
          html`<p>There is no such key in this account.</p><p><a href="/portal/keys">Back to your keys</a></p>`,
          'keys',
          404,
        );
        return;
      }
      loggerOf(res, logger).info({ tenantId: account.tenantId, keyId: id }, 'API key revoked in the portal');
      res.redirect(303, id.toLowerCase() === account.keyId ? '/portal/login' : '/portal/keys');
    },
    signedIn,
  );

  mountWebhookPages(router, { webhooks: deps.webhooks, logger, shell, signedIn, signedOf, withinWebhooksLimit });
  return router;
}

/** A starting point for the test form: each declared property with an empty value of its type. */
function sampleInput(schema: Record<string, unknown>): Record<string, unknown> {
  const properties = schema.properties;
  if (typeof properties !== 'object' || properties === null) return {};
  const empty: Record<string, unknown> = { string: '', number: 0, integer: 0, boolean: false, array: [], object: {} };
  return Object.fromEntries(
    Object.entries(properties as Record<string, { type?: unknown; examples?: unknown[] }>).map(([name, property]) => {
      if (Array.isArray(property.examples) && property.examples.length > 0) return [name, property.examples[0]];
      return [name, typeof property.type === 'string' ? (empty[property.type] ?? null) : null];
    }),
  );
}
