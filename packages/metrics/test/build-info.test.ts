import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseConfig } from '@fin/config';
import { createLogger } from '@fin/log';
import { metricsConfigShape, startMetricsServer } from '../src';

const logger = createLogger({ service: 'metrics-test', level: 'silent' });

async function scrapeBuildInfo(build?: { version?: string | undefined; commit?: string | undefined }): Promise<string[]> {
  const metrics = await startMetricsServer({ port: 0, host: '127.0.0.1', logger, ...(build ? { build } : {}) });
  try {
    const text = await (await fetch(metrics.url)).text();
    return text.split('\n').filter((line) => line.startsWith('fin_build_info'));
  } finally {
    await metrics.close();
  }
}

describe('fin_build_info', () => {
  it('reports the release from FIN_VERSION and FIN_COMMIT, with the Node.js version, as one series of value 1', async () => {
    const config = parseConfig(metricsConfigShape(0), { FIN_VERSION: '1.4.0', FIN_COMMIT: '3f2c1ab' });
    expect(await scrapeBuildInfo({ version: config.FIN_VERSION, commit: config.FIN_COMMIT })).toEqual([
      `fin_build_info{version="1.4.0",commit="3f2c1ab",node_version="${process.version}"} 1`,
    ]);
  });

  it("falls back to the package's version when the image sets none (an empty variable counts as none)", async () => {
    const config = parseConfig(metricsConfigShape(0), { FIN_VERSION: '', FIN_COMMIT: ' ' });
    expect([config.FIN_VERSION, config.FIN_COMMIT]).toEqual([undefined, undefined]);
    const { version } = JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version: string };
    expect(await scrapeBuildInfo({ version: config.FIN_VERSION, commit: config.FIN_COMMIT })).toEqual([
      `fin_build_info{version="${version}",commit="",node_version="${process.version}"} 1`,
    ]);
  });
});
