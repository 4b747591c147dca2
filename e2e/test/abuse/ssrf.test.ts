// The SSRF payload list (src/abuse/ssrf-payloads.ts) against customer tools, with canary listeners on every local
// IPv4 address (0.0.0.0) and, when the machine has IPv6, every local IPv6 address (::), counting every TCP
// connection they receive. Twice:
//  1. the executor every tool call goes through, with production policy and a hostile resolver injected (names a
//     DNS answers with private addresses), plus a public endpoint (the fake customer API, trusted for the test) that
//     redirects to private targets;
//  2. the whole system (one process, production policy, this machine's resolver): each endpoint registered through
//     the gateway's API and called by the portal's Test button, its outcome read back from the call audit.
//  3. webhooks in the same system: each payload registered as a webhook endpoint through the gateway (an IP literal
//     that is not public is refused there), sent a test event by the jobs service's dispatcher through the same
//     executor, the attempt's outcome read back from the deliveries list.
// Every payload must end refused with the outcome it calls for, and the canaries must count 0 connections.
import { lookup } from 'node:dns/promises';
import { networkInterfaces } from 'node:os';
import { CustomerTool, CustomerToolCallListResponse, ErrorBody, WebhookCreated, WebhookDeliveryListResponse } from '@fin/contracts';
import { bareAddress, createToolExecutor, isAllowedAddress, type ToolExecutor, type ToolRequest } from '@fin/customer-tools';
import {
  hasIpv6Loopback,
  startCanary,
  startFakeCustomerApi,
  testCertificate,
  type Canary,
  type FakeCustomerApi,
} from '@fin/customer-tools/testing';
import { waitFor } from '@fin/testing';
import { signIn } from '../../src/abuse/portal';
import { Tally, report } from '../../src/abuse/report';
import { HOSTILE_DNS, ssrfPayloads, type SsrfPayload } from '../../src/abuse/ssrf-payloads';
import { startAbuseTarget, type AbuseTarget } from '../../src/abuse/target';
import { isIP } from 'node:net';

const request = (endpoint: string): ToolRequest => ({ endpoint, method: 'POST', headers: {}, input: { account: 'A-1' }, timeoutMs: 2_000 });

/** This machine's own addresses that are not public (reaching them is reaching the host). */
function ownAddresses(): string[] {
  const addresses = Object.values(networkInterfaces()).flatMap((entries) => (entries ?? []).map((entry) => entry.address));
  return [...new Set(addresses)].filter((address) => !isAllowedAddress(address) && address !== '127.0.0.1' && address !== '::1');
}

/** Local names as this machine resolves them; a name that resolves to a public address is left out. */
async function localNames(): Promise<{ name: string; resolves: boolean }[]> {
  const names: { name: string; resolves: boolean }[] = [];
  for (const name of ['localhost', 'LOCALHOST', 'localhost.', 'ip6-localhost', 'ip6-loopback', (await import('node:os')).hostname()]) {
    try {
      const answers = await lookup(name, { all: true, order: 'verbatim' });
      if (answers.every((answer) => !isAllowedAddress(answer.address))) names.push({ name, resolves: true });
    } catch {
      names.push({ name, resolves: false });
    }
  }
  return names;
}

describe('SSRF payloads against customer tools', () => {
  let canary4: Canary;
  let canary6: Canary | undefined;
  let payloads: SsrfPayload[];
  const outcomes = new Tally();
  const counted = { executor: 0, system: 0, registration: 0, webhooks: 0, webhooksRefused: 0 };

  beforeAll(async () => {
    canary4 = await startCanary('0.0.0.0');
    if (await hasIpv6Loopback()) canary6 = await startCanary('::');
    payloads = ssrfPayloads({
      port4: canary4.port,
      port6: canary6?.port ?? canary4.port,
      ownAddresses: ownAddresses(),
      localNames: await localNames(),
    });
  });

  afterAll(async () => {
    await Promise.all([canary4?.close(), canary6?.close()]);
    const connections = (canary4?.connections() ?? 0) + (canary6?.connections() ?? 0);
    report(
      'ssrf',
      `${payloads.length} payloads; ${counted.executor} calls through the executor, ${counted.system} through the system (+${counted.registration} refused at registration), ${counted.webhooks} webhook deliveries (+${counted.webhooksRefused} refused at registration): ${connections} connections to the canaries; outcomes ${outcomes.toString()}`,
      {
        payloads: payloads.length,
        executorCalls: counted.executor,
        systemCalls: counted.system,
        refusedAtRegistration: counted.registration,
        webhookAttempts: counted.webhooks,
        webhooksRefusedAtRegistration: counted.webhooksRefused,
        canaryConnections: connections,
        outcomes: outcomes.toJSON(),
        list: payloads,
      },
    );
  });

  function expectNoConnection(): void {
    expect({ ipv4: canary4.connections(), ipv6: canary6?.connections() ?? 0 }).toEqual({ ipv4: 0, ipv6: 0 });
  }

  describe('the executor, with a hostile resolver', () => {
    let strict: ToolExecutor;
    let redirector: ToolExecutor;
    let api: FakeCustomerApi;

    beforeAll(async () => {
      const resolve = (hostname: string) => Promise.resolve([...(HOSTILE_DNS[hostname.toLowerCase()] ?? HOSTILE_DNS[hostname] ?? [])]);
      strict = createToolExecutor({ resolve });
      // The public endpoint that redirects: the fake customer API on loopback, which only this executor may reach.
      api = await startFakeCustomerApi();
      redirector = createToolExecutor({ resolve, allowLoopback: true, ca: (await testCertificate()).cert });
    });

    afterAll(async () => {
      await Promise.all([strict?.close(), redirector?.close(), api?.close()]);
    });

    it('refuses every payload with the outcome it calls for, and no canary counts a connection', async () => {
      const problems: string[] = [];
      for (const payload of payloads.filter((candidate) => !candidate.localResolver)) {
        const result = payload.redirect
          ? await redirector.call(request(`${api.url}/redirect?to=${encodeURIComponent(payload.endpoint)}`))
          : await strict.call(request(payload.endpoint));
        counted.executor += 1;
        outcomes.add(result.outcome);
        const clear = result.error !== null && result.error.length > 10 && result.responseBytes === 0 && result.body === null;
        const status = payload.redirect ? 302 : null;
        if (result.outcome !== payload.expected || !clear || result.httpStatus !== status) {
          problems.push(
            `${JSON.stringify(payload.endpoint)} (${payload.category}): expected ${payload.expected}, got ${JSON.stringify(result)}`,
          );
        }
      }
      expect(problems).toEqual([]);
      expectNoConnection();
      // Only the redirecting endpoint itself was reached, once per redirect payload.
      expect(api.requests.map((received) => received.path.split('?')[0])).toEqual(
        payloads.filter((payload) => payload.redirect).map(() => '/redirect'),
      );
    }, 120_000);

    it('(control) a canary does count a connection when the address is allowed, so a count of 0 means refused', async () => {
      const control = await startCanary('0.0.0.0');
      try {
        const result = await redirector.call(request(`https://127.0.0.1:${control.port}/`));
        // The canary is not a TLS server: the call fails, after connecting.
        expect(result.outcome).toBe('connection_failed');
        expect(control.connections()).toBe(1);
      } finally {
        await control.close();
      }
    });
  });

  describe("the whole system: registered through the gateway, called by the portal's Test button", () => {
    let target: AbuseTarget;

    beforeAll(async () => {
      target = await startAbuseTarget();
    }, 120_000);

    afterAll(async () => {
      const exitCode = await target?.stop();
      if (exitCode !== 0) throw new Error(`the system did not shut down cleanly (exit ${exitCode})`);
    });

    it('refuses every payload the system can be given (no injected resolver, no trusted redirector) without a connection', async () => {
      const key = target.keys.acme.valid;
      const api = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${target.url}${path}`, {
          method,
          headers: { 'X-API-Key': key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        return { status: res.status, body: await res.json() };
      };
      const tool = {
        name: 'ssrf_probe',
        description: 'A probe.',
        method: 'POST',
        input_schema: { type: 'object', properties: { account: { type: 'string' } } },
      };
      const created = await api('POST', '/api/customer-tools/', { ...tool, endpoint: 'https://api.example.com/positions' });
      expect(created.status).toBe(201);
      const id = CustomerTool.parse(created.body).id;
      const session = await signIn(target.url, key);

      const problems: string[] = [];
      for (const payload of payloads.filter((candidate) => !candidate.resolver && !candidate.redirect)) {
        const replaced = await api('PUT', `/api/customer-tools/${id}`, { ...tool, endpoint: payload.endpoint });
        if (replaced.status === 400) {
          // Refused at registration, naming the endpoint: only what is not written as an absolute https:// URL
          // (or carries credentials) may be; private hosts are refused when called, since DNS changes.
          counted.registration += 1;
          outcomes.add('refused_at_registration');
          const detail = ErrorBody.parse(replaced.body).detail;
          const mayBeRefused = payload.expected === 'invalid_endpoint' || !/^https:\/\//i.test(payload.endpoint.trim());
          if (!mayBeRefused || !detail.startsWith('endpoint: '))
            problems.push(`${JSON.stringify(payload.endpoint)} (${payload.category}): refused at registration with ${detail}`);
          continue;
        }
        if (replaced.status !== 200) {
          problems.push(`${JSON.stringify(payload.endpoint)}: PUT answered ${replaced.status} ${JSON.stringify(replaced.body)}`);
          continue;
        }
        const shown = await session.test(id, { account: 'A-1' });
        counted.system += 1;
        const calls = CustomerToolCallListResponse.parse((await api('GET', `/api/customer-tools/${id}/calls?limit=1`)).body).calls;
        const recorded = calls[0];
        outcomes.add(recorded?.outcome ?? 'none');
        if (
          shown !== payload.expected ||
          recorded?.outcome !== payload.expected ||
          recorded.response_bytes !== 0 ||
          recorded.http_status !== null
        ) {
          problems.push(
            `${JSON.stringify(payload.endpoint)} (${payload.category}): expected ${payload.expected}, the page showed ${shown}, the audit ${JSON.stringify(recorded)}`,
          );
        }
      }
      expect(problems).toEqual([]);
      expectNoConnection();
    }, 180_000);

    it('refuses every payload as a webhook URL: an IP literal at registration, the rest when the delivery is sent', async () => {
      const key = target.keys.acme.valid;
      const api = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${target.url}${path}`, {
          method,
          headers: { 'X-API-Key': key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await res.text();
        return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
      };
      const problems: string[] = [];
      const candidates = payloads.filter((candidate) => !candidate.resolver && !candidate.redirect);
      // In batches: an account has at most 20 endpoints; each batch's endpoints are deleted with their deliveries.
      for (let start = 0; start < candidates.length; start += 20) {
        const queued: { payload: SsrfPayload; id: string }[] = [];
        for (const payload of candidates.slice(start, start + 20)) {
          const created = await api('POST', '/api/webhooks/', { url: payload.endpoint });
          if (created.status === 400) {
            counted.webhooksRefused += 1;
            outcomes.add('webhook_refused_at_registration');
            // Refused at registration, naming the URL: what is not an absolute https:// URL (or carries credentials),
            // and a host that is an IP literal (or a localhost name) that is not public.
            const detail = ErrorBody.parse(created.body).detail;
            let host = '';
            try {
              host = bareAddress(new URL(payload.endpoint.trim()).hostname).toLowerCase();
            } catch {
              // not a URL: refused for its form
            }
            const literal = isIP(host) !== 0 || host === 'localhost' || host.endsWith('.localhost') || host === 'localhost.';
            const mayBeRefused = payload.expected === 'invalid_endpoint' || !/^https:\/\//i.test(payload.endpoint.trim()) || literal;
            if (!mayBeRefused || !detail.startsWith('url: '))
              problems.push(`${JSON.stringify(payload.endpoint)} (${payload.category}): refused at registration with ${detail}`);
            continue;
          }
          if (created.status !== 201) {
            problems.push(`${JSON.stringify(payload.endpoint)}: POST answered ${created.status} ${JSON.stringify(created.body)}`);
            continue;
          }
          const hook = WebhookCreated.parse(created.body);
          expect((await api('POST', `/api/webhooks/${hook.id}/test`)).status).toBe(202);
          queued.push({ payload, id: hook.id });
        }
        for (const { payload, id } of queued) {
          const attempt = await waitFor(
            async () => {
              const listed = WebhookDeliveryListResponse.parse((await api('GET', `/api/webhooks/${id}/deliveries`)).body).deliveries;
              return listed[0]?.attempts.at(-1);
            },
            { timeoutMs: 20_000, what: `the first attempt to ${payload.endpoint}` },
          );
          counted.webhooks += 1;
          outcomes.add(`webhook ${attempt.outcome}`);
          if (attempt.outcome !== payload.expected || attempt.http_status !== null || attempt.response_excerpt !== null)
            problems.push(
              `${JSON.stringify(payload.endpoint)} (${payload.category}): expected ${payload.expected}, the attempt ${JSON.stringify(attempt)}`,
            );
          expect((await api('DELETE', `/api/webhooks/${id}`)).status).toBe(204);
        }
      }
      expect(problems).toEqual([]);
      expect(counted.webhooks).toBeGreaterThan(0);
      expectNoConnection();
    }, 300_000);
  });
});
