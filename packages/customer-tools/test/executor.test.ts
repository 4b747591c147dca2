import { createToolExecutor, type ToolExecutor, type ToolRequest } from '../src';
import { hasIpv6Loopback, startCanary, startFakeCustomerApi, testCertificate, type Canary, type FakeCustomerApi } from './support';

const request = (endpoint: string, fields: Partial<ToolRequest> = {}): ToolRequest => ({
  endpoint,
  method: 'POST',
  headers: {},
  input: { account: 'A-1' },
  timeoutMs: 5_000,
  ...fields,
});

describe('the tool executor refuses every non-public target before connecting', () => {
  let canary: Canary;
  let canary6: Canary | undefined;
  let strict: ToolExecutor;
  let loopbackOnly: ToolExecutor;
  const resolved: string[] = [];
  /** A resolver under the test's control: names map to the addresses a hostile DNS server would answer. */
  const hostileDns: Record<string, string[]> = {};

  beforeAll(async () => {
    canary = await startCanary('127.0.0.1');
    if (await hasIpv6Loopback()) canary6 = await startCanary('::1');
    hostileDns['internal.example.com'] = ['10.0.0.1'];
    hostileDns['loopback.example.com'] = ['127.0.0.1'];
    hostileDns['metadata.example.com'] = ['169.254.169.254'];
    hostileDns.localhost = ['127.0.0.1', '::1'];
    // Loopback and private: with the loopback switch on, the first would be allowed, the second never. The name
    // must be refused as a whole (and the loopback canary stays at zero). No routable address is ever used.
    hostileDns['mixed.example.com'] = ['127.0.0.1', '10.0.0.1'];
    hostileDns['mapped.example.com'] = ['::ffff:127.0.0.1'];
    const resolve = async (hostname: string) => {
      resolved.push(hostname);
      return hostileDns[hostname] ?? [];
    };
    strict = createToolExecutor({ resolve });
    loopbackOnly = createToolExecutor({ resolve, allowLoopback: true, ca: (await testCertificate()).cert });
  });

  afterAll(async () => {
    await Promise.all([strict?.close(), loopbackOnly?.close(), canary?.close(), canary6?.close()]);
  });

  const loopbackTargets = () => [
    `https://127.0.0.1:${canary.port}/`,
    `https://127.1:${canary.port}/`,
    `https://2130706433:${canary.port}/`, // decimal
    `https://0x7f000001:${canary.port}/`, // hex
    `https://017700000001:${canary.port}/`, // octal
    `https://0.0.0.0:${canary.port}/`,
    `https://[::ffff:127.0.0.1]:${canary.port}/`, // IPv4-mapped IPv6
    `https://[::ffff:7f00:1]:${canary.port}/`,
    `https://[::127.0.0.1]:${canary.port}/`, // IPv4-compatible IPv6
    `https://[64:ff9b::7f00:1]:${canary.port}/`, // NAT64
    `https://localhost:${canary.port}/`,
    `https://loopback.example.com:${canary.port}/`,
    `https://mixed.example.com:${canary.port}/`,
  ];

  it.each(['127.0.0.1', '2130706433', '[::ffff:127.0.0.1]', '[::1]', 'loopback.example.com', 'localhost'])(
    'refuses %s without a single connection to the canary',
    async (host) => {
      const port = host === '[::1]' ? (canary6?.port ?? canary.port) : canary.port;
      const result = await strict.call(request(`https://${host}:${port}/positions`));
      expect(result).toMatchObject({ outcome: 'blocked_address', httpStatus: null, responseBytes: 0 });
      expect(result.error).toMatch(/public/);
      expect(canary.connections()).toBe(0);
      expect(canary6?.connections() ?? 0).toBe(0);
    },
  );

  it('refuses every spelling of loopback, and names that resolve to it, with the canaries still at zero', async () => {
    for (const endpoint of loopbackTargets()) {
      const result = await strict.call(request(endpoint));
      expect({ endpoint, outcome: result.outcome }).toEqual({ endpoint, outcome: 'blocked_address' });
    }
    expect(canary.connections()).toBe(0);
  });

  it.each([
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'cloud metadata'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['198.18.0.1', 'benchmarking'],
    ['[fd00:ec2::254]', 'EC2 IPv6 metadata'],
    ['[fe80::1]', 'link-local'],
    ['[ff02::1]', 'multicast'],
    ['[2002:a00:1::]', '6to4 of 10.0.0.1'],
    ['[2001:db8::1]', 'documentation'],
    ['internal.example.com', 'a name resolving to 10.0.0.1'],
    ['metadata.example.com', 'a name resolving to 169.254.169.254'],
    ['mapped.example.com', 'a name resolving to an IPv4-mapped loopback'],
  ])('refuses %s (%s)', async (host) => {
    const result = await strict.call(request(`https://${host}/v1`));
    expect(result.outcome).toBe('blocked_address');
  });

  it('asks the resolver for host names and refuses on its answer (the checked answer is the one used)', async () => {
    resolved.length = 0;
    await strict.call(request('https://internal.example.com/v1'));
    expect(resolved).toEqual(['internal.example.com']);
  });

  it('with the test-only loopback switch, still refuses private, metadata and mapped addresses', async () => {
    for (const host of [
      '10.0.0.1',
      '169.254.169.254',
      '[fd00:ec2::254]',
      'internal.example.com',
      `[::ffff:127.0.0.1]:${canary.port}`,
      `mixed.example.com:${canary.port}`,
    ]) {
      const result = await loopbackOnly.call(request(`https://${host}/v1`));
      expect({ host, outcome: result.outcome }).toEqual({ host, outcome: 'blocked_address' });
    }
    expect(canary.connections()).toBe(0);
  });

  it('refuses endpoints that are not https or carry credentials, without connecting', async () => {
    expect((await strict.call(request(`http://127.0.0.1:${canary.port}/`))).outcome).toBe('invalid_endpoint');
    expect((await strict.call(request('https://user:pw@api.example.com/'))).outcome).toBe('invalid_endpoint');
    expect(canary.connections()).toBe(0);
  });

  describe('against a fake customer API on loopback (switch on)', () => {
    let api: FakeCustomerApi;

    beforeAll(async () => {
      api = await startFakeCustomerApi();
    });

    afterAll(async () => {
      await api?.close();
    });

    it('POSTs the arguments as JSON with the configured headers, and reads the answer', async () => {
      const result = await loopbackOnly.call(
        request(`${api.url}/positions`, { headers: { Authorization: 'Bearer s3cret', 'X-Tenant': 'acme' } }),
      );
      expect(result).toMatchObject({ outcome: 'ok', httpStatus: 200, error: null });
      expect(JSON.parse(result.body ?? '')).toMatchObject({ method: 'POST', body: { account: 'A-1' } });
      expect(result.responseBytes).toBe(Buffer.byteLength(result.body ?? ''));
      const received = api.requests.at(-1);
      expect(received?.headers).toMatchObject({ authorization: 'Bearer s3cret', 'x-tenant': 'acme', 'content-type': 'application/json' });
    });

    it('sends GET arguments as query parameters', async () => {
      const result = await loopbackOnly.call(
        request(`${api.url}/positions?v=2`, { method: 'GET', input: { account: 'A 1', symbols: ['AAPL', 'MSFT'], limit: 3 } }),
      );
      expect(result.outcome).toBe('ok');
      expect(api.requests.at(-1)?.path).toBe('/positions?v=2&account=A+1&symbols=AAPL&symbols=MSFT&limit=3');
    });

    it('reports a 4xx answer as http_error with its body', async () => {
      const result = await loopbackOnly.call(request(`${api.url}/status/404`));
      expect(result).toMatchObject({ outcome: 'http_error', httpStatus: 404, body: '{"error":"account not found"}' });
    });

    it('never follows a redirect, so a public endpoint cannot bounce the call to an internal one', async () => {
      const result = await loopbackOnly.call(
        request(`${api.url}/redirect?to=${encodeURIComponent(`https://127.0.0.1:${canary.port}/latest/meta-data`)}`),
      );
      expect(result).toMatchObject({ outcome: 'redirect_refused', httpStatus: 302 });
      expect(canary.connections()).toBe(0);
    });

    it("gives up on an API that never answers, at the tool's time limit", async () => {
      const result = await loopbackOnly.call(request(`${api.url}/hang`, { timeoutMs: 300 }));
      expect(result).toMatchObject({ outcome: 'timeout', httpStatus: null });
      expect(result.error).toMatch(/within 300 ms/);
    });

    it('cuts a 10 MB answer off at the response cap', async () => {
      const capped = createToolExecutor({ allowLoopback: true, ca: (await testCertificate()).cert, maxResponseBytes: 1024 * 1024 });
      try {
        const result = await capped.call(request(`${api.url}/huge?mb=10`, { timeoutMs: 20_000 }));
        expect(result).toMatchObject({ outcome: 'response_too_large', httpStatus: 200, responseBytes: 1024 * 1024, body: null });
      } finally {
        await capped.close();
      }
    });

    it('stops when the run is aborted', async () => {
      const controller = new AbortController();
      const pending = loopbackOnly.call(request(`${api.url}/hang`), { signal: controller.signal });
      controller.abort();
      expect((await pending).outcome).toBe('aborted');
    });

    it('does not trust a certificate it was not given (TLS is verified)', async () => {
      const untrusting = createToolExecutor({ allowLoopback: true });
      try {
        const result = await untrusting.call(request(`${api.url}/positions`));
        expect(result.outcome).toBe('connection_failed');
        expect(result.error).toMatch(/CERT|SELF_SIGNED|certificate/i);
      } finally {
        await untrusting.close();
      }
    });
  });
});

// The webhook sender counts each attempt against the address it goes to (destination) before sending it; with
// resolutionTtlMs the connection reuses that checked answer, so a name server cannot answer one address to the
// count and another to the connection.
describe('the destination of a call', () => {
  it('is the checked address a call connects to, null when it would not connect, and one answer for both with resolutionTtlMs', async () => {
    const api = await startFakeCustomerApi();
    const port = new URL(api.url).port;
    const answers: Record<string, string[][]> = { 'flip.example.com': [['127.0.0.1'], ['10.0.0.1']] };
    let lookups = 0;
    const resolve = async (hostname: string) => {
      lookups += 1;
      return answers[hostname]?.shift() ?? (hostname === 'private.example.com' ? ['10.0.0.1'] : []);
    };
    const executor = createToolExecutor({ resolve, allowLoopback: true, ca: (await testCertificate()).cert, resolutionTtlMs: 30_000 });
    try {
      expect(await executor.destination(`https://127.1:${port}/`)).toBe('127.0.0.1');
      expect(await executor.destination('https://10.0.0.1/')).toBeNull();
      expect(await executor.destination('https://private.example.com/')).toBeNull();
      expect(await executor.destination('https://nowhere.example.com/')).toBeNull();
      expect(await executor.destination('not a url')).toBeNull();
      // Counted at 127.0.0.1; the second answer (a private address) is never asked for: the call goes where it was counted.
      expect(await executor.destination(`https://flip.example.com:${port}/`)).toBe('127.0.0.1');
      const before = lookups;
      const result = await executor.call(request(`https://flip.example.com:${port}/`));
      expect(result.outcome).not.toBe('blocked_address');
      expect(lookups).toBe(before);
      expect(answers['flip.example.com']).toEqual([['10.0.0.1']]);
    } finally {
      await executor.close();
      await api.close();
    }
  });
});
