import { createLogger } from '@fin/log';
import { httpRequests, registry, startMetricsServer } from '../src';

const logger = createLogger({ service: 'metrics-test', level: 'silent' });

describe('the metrics listener', () => {
  it('serves the registry in the Prometheus text format at GET /metrics, liveness at /healthz, and nothing else', async () => {
    const metrics = await startMetricsServer({ port: 0, host: '127.0.0.1', logger });
    try {
      httpRequests.inc({ service: 'test', method: 'GET', route: '/x/:id', status: '200' });
      const res = await fetch(metrics.url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(registry.contentType);
      const text = await res.text();
      expect(text).toContain('# TYPE fin_http_requests_total counter');
      expect(text).toContain('fin_http_requests_total{service="test",method="GET",route="/x/:id",status="200"} 1');
      // Process metrics come along under the same prefix.
      expect(text).toContain('fin_process_resident_memory_bytes');
      expect((await fetch(metrics.url.replace('/metrics', '/other'))).status).toBe(404);
      // Liveness for processes without an API port (worker roles).
      const health = await fetch(metrics.url.replace('/metrics', '/healthz'));
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok' });
      expect((await fetch(metrics.url, { method: 'POST' })).status).toBe(404);
    } finally {
      await metrics.close();
    }
  });

  it('names the variable to change when its port is taken', async () => {
    const first = await startMetricsServer({ port: 0, host: '127.0.0.1', logger });
    try {
      const port = Number(new URL(first.url).port);
      await expect(startMetricsServer({ port, host: '127.0.0.1', logger })).rejects.toThrow(`METRICS_PORT ${port} is in use`);
    } finally {
      await first.close();
    }
  });
});
