import { ConfigError, parseConfig } from '@fin/config';
import { testCustomerToolsKey } from '@fin/testing';
import { stockReportConfigShape } from '../src/config';

const REQUIRED = {
  DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/fin',
  INTERNAL_SIGNING_SECRET: 'k'.repeat(40),
  KAFKA_BROKERS: '127.0.0.1:19092',
  CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
};

describe('stock-report configuration', () => {
  it('runs both roles on port 8082 with a time limit that fits a 30–45 s comparison', () => {
    const config = parseConfig(stockReportConfigShape, REQUIRED);
    expect(config).toMatchObject({
      PORT: 8082,
      STOCK_REPORT_ROLE: 'all',
      STOCK_REPORT_TIME_LIMIT_MS: 90_000,
      STOCK_REPORT_WORKER_CONCURRENCY: 200,
      STOCK_REPORT_MAX_ATTEMPTS: 3,
      STOCK_REPORT_LEASE_MS: 15_000,
      KAFKA_CLIENT_ID: 'stock-report',
    });
  });

  it('refuses to start with a bad value, naming the variable', () => {
    const parse = () => parseConfig(stockReportConfigShape, { ...REQUIRED, STOCK_REPORT_ROLE: 'both', STOCK_REPORT_TIME_LIMIT_MS: '500' });
    expect(parse).toThrow(ConfigError);
    expect(parse).toThrow(/STOCK_REPORT_ROLE[\s\S]*STOCK_REPORT_TIME_LIMIT_MS|STOCK_REPORT_TIME_LIMIT_MS[\s\S]*STOCK_REPORT_ROLE/);
  });
});
