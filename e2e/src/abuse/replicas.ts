// Two gateway replicas on one database, on a database of the test's own and the test broker. With the `http`
// upstream, as deployed: each gateway a process of its own with its own pool, in front of the same job-status, news
// and chat services (processes too). With `in-process`, two replicas of what `npm start` runs (each the gateway and
// every service in one process). The model is a fake the test controls (e.g. one that never answers, so chat
// streams stay open).
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, sharedEnv, startService, waitUntilReady, type ServiceProcess, type UpstreamMode } from '../system';

export interface ReplicatedGateways {
  /** The replicas' base URLs. */
  gateways: string[];
  /** A pool on the database, for the key store's operator functions (@fin/api-keys). */
  pool: pg.Pool;
  services: ServiceProcess[];
  stop(): Promise<void>;
}

export async function startReplicatedGateways({
  replicas = 2,
  anthropicUrl,
  upstream = 'http',
}: {
  replicas?: number;
  anthropicUrl: string;
  upstream?: UpstreamMode;
}): Promise<ReplicatedGateways> {
  const database: TestDatabase = await createTestDatabase();
  const env = sharedEnv({ databaseUrl: database.url, anthropicUrl, finnhubUrl: 'http://127.0.0.1:9', finnhubToken: 'unused-token' });
  const [jobsPort, newsPort, chatPort, ...gatewayPorts] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    ...Array.from({ length: replicas }, () => freePort()),
  ]);
  const services: ServiceProcess[] = [];
  const ready: Promise<void>[] = [];
  const start = (name: string, dir: string, port: number, extra: Record<string, string> = {}) => {
    const service = startService(name, dir, { ...env, PORT: String(port), ...extra });
    services.push(service);
    ready.push(waitUntilReady(`http://127.0.0.1:${port}/readyz`, service, 60_000));
  };
  const dataDirs: string[] = [];
  if (upstream === 'http') {
    start('jobs', 'jobs', jobsPort);
    start('news-api', 'news', newsPort, { NEWS_ROLE: 'api' });
    start('chat', 'chat', chatPort);
    const upstreams = {
      JOBS_URL: `http://127.0.0.1:${jobsPort}`,
      NEWS_URL: `http://127.0.0.1:${newsPort}`,
      CHAT_URL: `http://127.0.0.1:${chatPort}`,
    };
    gatewayPorts.forEach((port, index) => start(`gateway-${index + 1}`, 'gateway', port, upstreams));
  } else {
    gatewayPorts.forEach((port, index) => {
      const dataDir = mkdtempSync(path.join(tmpdir(), 'fin-replica-'));
      dataDirs.push(dataDir);
      // npm start runs the news worker too: the news jobs the limit checks admit fail at once instead of holding a
      // model call that never answers (the chat checks count the calls running at the model).
      start(`standalone-${index + 1}`, 'standalone', port, { DATA_DIR: dataDir, NEWS_TIME_LIMIT_MS: '1000', NEWS_MAX_ATTEMPTS: '1' });
    });
  }
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  const stop = async () => {
    await Promise.all(services.map((service) => service.stop()));
    await pool.end();
    await database.drop();
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(ready);
  } catch (error) {
    await stop();
    throw error;
  }
  return { gateways: gatewayPorts.map((port) => `http://127.0.0.1:${port}`), pool, services, stop };
}
