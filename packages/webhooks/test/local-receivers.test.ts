// Webhooks to a receiver on the developer's own machine (WEBHOOK_ALLOW_LOCAL_HTTP): plain http to a loopback host
// only, development only (refused with NODE_ENV=production), and nothing else widened.
import { WebhookUrl } from '@fin/contracts';
import { ConfigError, parseConfig } from '@fin/config';
import { customerToolsConfigShape, webhookTargetPolicy } from '@fin/customer-tools';
import { createLogger } from '@fin/log';
import { startFakeReceiver, type FakeReceiver } from '../test/support';
import { unreachableTargetReason, webhookSenderFromConfig, webhooksConfigShape, WEBHOOK_DEFAULTS } from '../src';

const KEY = `dev-1:${Buffer.alloc(32, 7).toString('base64')}`;
const logger = createLogger({ service: 'local-receivers-test', level: 'silent' });

describe('local webhook receivers (WEBHOOK_ALLOW_LOCAL_HTTP)', () => {
  let receiver: FakeReceiver;
  beforeAll(async () => {
    receiver = await startFakeReceiver({ plainHttp: true });
  });
  afterAll(async () => {
    await receiver.close();
  });

  it('is refused at start with NODE_ENV=production, naming the variable, in every process that reads it', () => {
    for (const shape of [customerToolsConfigShape, webhooksConfigShape]) {
      const env = { CUSTOMER_TOOLS_ENCRYPTION_KEY: KEY, WEBHOOK_ALLOW_LOCAL_HTTP: 'true' };
      expect(parseConfig(shape, env).WEBHOOK_ALLOW_LOCAL_HTTP).toBe(true);
      expect(parseConfig(shape, { ...env, NODE_ENV: 'development' }).WEBHOOK_ALLOW_LOCAL_HTTP).toBe(true);
      expect(parseConfig(shape, { CUSTOMER_TOOLS_ENCRYPTION_KEY: KEY, NODE_ENV: 'production' }).WEBHOOK_ALLOW_LOCAL_HTTP).toBe(false);
      let refused: unknown;
      try {
        parseConfig(shape, { ...env, NODE_ENV: 'production' });
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(ConfigError);
      expect((refused as ConfigError).issues).toEqual([
        { variable: 'WEBHOOK_ALLOW_LOCAL_HTTP', message: expect.stringContaining('development only') as unknown },
      ]);
    }
  });

  it('accepts http:// only to this machine, and only with the flag on', () => {
    const on = webhookTargetPolicy({ WEBHOOK_ALLOW_LOCAL_HTTP: true });
    const off = webhookTargetPolicy({});
    const testsOnly = webhookTargetPolicy({ CUSTOMER_TOOLS_ALLOW_LOOPBACK: true });
    for (const url of ['http://localhost:9000/hooks', 'http://127.0.0.1:9000/hooks', 'http://[::1]:9000/hooks', 'http://app.localhost/x']) {
      expect(WebhookUrl.safeParse(url).success).toBe(true);
      expect(unreachableTargetReason(url, on)).toBeNull();
      expect(unreachableTargetReason(url, off)).toMatch(/must be an https:\/\/ URL/);
      // The tests' loopback switch still needs https.
      expect(unreachableTargetReason(url, testsOnly)).toMatch(/must be an https:\/\/ URL/);
    }
    // Loopback over https too, with the flag on.
    expect(unreachableTargetReason('https://127.0.0.1:9443/hooks', on)).toBeNull();
    expect(unreachableTargetReason('https://127.0.0.1:9443/hooks', off)).toMatch(/not a public internet address/);
    // Nothing else is widened: http to anything but this machine fails the contract, and the service refuses it too.
    for (const url of [
      'http://hooks.example.com/fin',
      'http://10.0.0.5/hooks',
      'http://192.168.1.10:8080/x',
      'http://127.0.0.1.nip.io/x',
    ]) {
      expect(WebhookUrl.safeParse(url).success).toBe(false);
      expect(unreachableTargetReason(url, on)).toMatch(/must be an https:\/\/ URL/);
    }
    expect(unreachableTargetReason('https://10.0.0.5/hooks', on)).toMatch(/not a public internet address/);
    expect(unreachableTargetReason('ftp://127.0.0.1/hooks', on)).toBe('must be an absolute https:// URL');
  });

  it('delivers to a plain http receiver on loopback with the flag on, and not without it', async () => {
    const request = {
      endpoint: `${receiver.url}/hooks`,
      method: 'POST' as const,
      headers: {},
      input: {},
      body: '{"type":"webhook.test"}',
      timeoutMs: 5_000,
    };
    const on = webhookSenderFromConfig(
      {
        ...WEBHOOK_DEFAULTS,
        CUSTOMER_TOOLS_ENCRYPTION_KEY: parseConfig(customerToolsConfigShape, { CUSTOMER_TOOLS_ENCRYPTION_KEY: KEY })
          .CUSTOMER_TOOLS_ENCRYPTION_KEY,
        WEBHOOK_ALLOW_LOCAL_HTTP: true,
      },
      logger,
    );
    const delivered = await on!.executor.call(request);
    expect(delivered).toMatchObject({ outcome: 'ok', httpStatus: 204 });
    expect(receiver.received.map((delivery) => [delivery.path, delivery.body])).toEqual([['/hooks', '{"type":"webhook.test"}']]);

    const testsOnly = webhookSenderFromConfig(
      {
        ...WEBHOOK_DEFAULTS,
        CUSTOMER_TOOLS_ENCRYPTION_KEY: parseConfig(customerToolsConfigShape, { CUSTOMER_TOOLS_ENCRYPTION_KEY: KEY })
          .CUSTOMER_TOOLS_ENCRYPTION_KEY,
        CUSTOMER_TOOLS_ALLOW_LOOPBACK: true,
      },
      logger,
    );
    expect(await testsOnly!.executor.call(request)).toMatchObject({
      outcome: 'invalid_endpoint',
      error: 'the endpoint must be an https:// URL',
    });
    expect(receiver.received).toHaveLength(1);
  });
});
