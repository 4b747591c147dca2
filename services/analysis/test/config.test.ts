// The analysis service's SEC EDGAR settings: both its roles run analyses, which read filings (the sec_filings tool),
// so online, as the AI, it refuses to start without an operator's User-Agent, as the stock-report service does (exit
// 78 naming the variable).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { ConfigError, parseConfig } from '@fin/config';
import { testCustomerToolsKey } from '@fin/testing';
import { analysisConfigShape } from '../src/config';

const REQUIRED = {
  DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/fin',
  INTERNAL_SIGNING_SECRET: 'k'.repeat(40),
  KAFKA_BROKERS: '127.0.0.1:19092',
  CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
};
const ONLINE = { ANTHROPIC_API_KEY: 'sk-ant-test-key-0000' };
const USER_AGENT = 'Example Research Ltd ops@example.com';

describe('analysis configuration: SEC EDGAR', () => {
  it('refuses EDGAR online without EDGAR_USER_AGENT, naming the variable: with a Claude key, or with EDGAR_OFFLINE=false', () => {
    for (const env of [ONLINE, { EDGAR_OFFLINE: 'false' }]) {
      const parse = () => parseConfig(analysisConfigShape, { ...REQUIRED, ...env });
      expect(parse).toThrow(ConfigError);
      expect(parse).toThrow(/EDGAR_USER_AGENT: is required while filings come from SEC EDGAR \(online\)/);
    }
  });

  it('reads EDGAR online with a User-Agent, and the bundled sample offline without one', () => {
    expect(parseConfig(analysisConfigShape, { ...REQUIRED, ...ONLINE, EDGAR_USER_AGENT: USER_AGENT })).toMatchObject({
      EDGAR_USER_AGENT: USER_AGENT,
      EDGAR_BASE_URL: 'https://www.sec.gov',
      EDGAR_DATA_URL: 'https://data.sec.gov',
    });
    expect(parseConfig(analysisConfigShape, REQUIRED).EDGAR_USER_AGENT).toBeUndefined();
    expect(parseConfig(analysisConfigShape, { ...REQUIRED, ...ONLINE, EDGAR_OFFLINE: 'true' }).EDGAR_OFFLINE).toBe(true);
  });

  it('as a process (src/main.ts), exits 78 naming EDGAR_USER_AGENT before anything starts', async () => {
    const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', path.join(__dirname, '../src/main.ts')], {
      cwd: path.join(__dirname, '..'),
      env: { PATH: process.env.PATH, ...REQUIRED, ...ONLINE, ANALYSIS_ROLE: 'api', PORT: '0', METRICS_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const [code] = (await once(child, 'close')) as [number | null];
    expect(code).toBe(78);
    expect(output).toContain('EDGAR_USER_AGENT: is required while filings come from SEC EDGAR (online)');
    expect(output).not.toContain('"ready"');
  }, 60_000);
});
