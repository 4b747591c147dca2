import { httpRequestDuration, httpRequests, sseStreamsOpen } from '@fin/metrics';
import { waitFor } from '@fin/testing';
import request from 'supertest';
import { createServiceApp, trackEventStream } from '../src';
import { captureLogger, listen } from './helpers';

const count = async (labels: { service: string; route: string; status: string }) =>
  (await httpRequests.get()).values.find(
    ({ labels: actual }) => actual.service === labels.service && actual.route === labels.route && actual.status === labels.status,
  )?.value ?? 0;

describe('HTTP metrics of every service app', () => {
  const app = createServiceApp({
    name: 'metrics-test',
    logger: captureLogger().logger,
    readiness: async () => undefined,
    routes: (routes) => {
      routes.get('/things/:id', (_req, res) => void res.json({ ok: true }));
      routes.get('/stream', (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        trackEventStream('metrics-test', res);
        res.write(': open\n\n');
      });
    },
  });

  it('labels requests by route template and status, never by raw path', async () => {
    const before = await count({ service: 'metrics-test', route: '/things/:id', status: '200' });
    await request(app).get('/things/1').expect(200);
    await request(app).get('/things/2').expect(200);
    expect(await count({ service: 'metrics-test', route: '/things/:id', status: '200' })).toBe(before + 2);
    const durations = (await httpRequestDuration.get()).values.filter(
      (value) => value.labels.route === '/things/:id' && value.metricName?.endsWith('_count'),
    );
    expect(durations[0]?.value).toBeGreaterThanOrEqual(2);
  });

  it('puts every path that matches no route under one label', async () => {
    const before = await count({ service: 'metrics-test', route: 'unmatched', status: '404' });
    await request(app).get('/no/such/path/1').expect(404);
    await request(app).get('/no/such/path/2').expect(404);
    expect(await count({ service: 'metrics-test', route: 'unmatched', status: '404' })).toBe(before + 2);
    const routes = (await httpRequests.get()).values.map((value) => String(value.labels.route));
    expect(routes.some((route) => route.includes('/no/such'))).toBe(false);
  });

  it('counts an event stream as open until the client leaves', async () => {
    const open = async () => (await sseStreamsOpen.get()).values.find((value) => value.labels.service === 'metrics-test')?.value ?? 0;
    const server = await listen(app);
    try {
      const controller = new AbortController();
      const res = await fetch(`${server.url}/stream`, { signal: controller.signal });
      const reader = res.body!.getReader();
      await reader.read();
      expect(await open()).toBe(1);
      controller.abort();
      await reader.cancel().catch(() => undefined);
      await waitFor(async () => (await open()) === 0, { what: 'the stream to be counted as closed' });
    } finally {
      await server.close();
    }
  });
});
