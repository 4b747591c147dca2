import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { z } from 'zod';
import {
  ConfigError,
  bool,
  crossChecked,
  csv,
  int,
  logConfigShape,
  parseConfig,
  placeholderSecretProblem,
  port,
  redactConfig,
  secret,
  url,
  type ConfigIssue,
} from '../src';

const shape = {
  PORT: port().default(8080),
  DATABASE_URL: url(['postgres', 'postgresql']),
  KAFKA_BROKERS: csv().default([]),
  DEBUG_SQL: bool().default(false),
  MAX_ATTEMPTS: int(1, 10).default(3),
  ANTHROPIC_API_KEY: secret(z.string().min(10)).optional(),
};

describe('parseConfig', () => {
  it('parses values into their types and applies defaults', () => {
    const config = parseConfig(shape, {
      DATABASE_URL: 'postgres://app@db:5432/fin',
      KAFKA_BROKERS: 'a:9092, b:9092,,',
      DEBUG_SQL: 'Yes',
    });
    expect(config).toEqual({
      PORT: 8080,
      DATABASE_URL: 'postgres://app@db:5432/fin',
      KAFKA_BROKERS: ['a:9092', 'b:9092'],
      DEBUG_SQL: true,
      MAX_ATTEMPTS: 3,
    });
  });

  it('treats a blank value as unset', () => {
    const config = parseConfig(shape, { DATABASE_URL: 'postgres://h/db', PORT: '  ' });
    expect(config.PORT).toBe(8080);
  });

  it('parses booleans instead of comparing them to "true"', () => {
    for (const [raw, expected] of [
      ['false', false],
      ['0', false],
      ['off', false],
      ['TRUE', true],
      ['1', true],
    ] as const) {
      expect(parseConfig(shape, { DATABASE_URL: 'postgres://h/db', DEBUG_SQL: raw }).DEBUG_SQL).toBe(expected);
    }
    expect(() => parseConfig(shape, { DATABASE_URL: 'postgres://h/db', DEBUG_SQL: 'maybe' })).toThrow(
      /DEBUG_SQL: expected true or false, got "maybe"/,
    );
  });

  it('names every bad or missing variable at once', () => {
    let error: unknown;
    try {
      parseConfig(shape, { PORT: '70000', MAX_ATTEMPTS: '2.5' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const issues = (error as ConfigError).issues;
    expect(issues).toEqual(
      expect.arrayContaining([
        { variable: 'DATABASE_URL', message: 'is required but not set' },
        { variable: 'PORT', message: 'expected an integer from 0 to 65535, got 70000' },
        { variable: 'MAX_ATTEMPTS', message: 'expected an integer, got "2.5"' },
      ]),
    );
    expect((error as Error).message).toContain('DATABASE_URL: is required but not set');
  });

  it('rejects a URL of the wrong scheme', () => {
    expect(() => parseConfig(shape, { DATABASE_URL: 'mysql://h/db' })).toThrow(
      /DATABASE_URL: expected a postgres or postgresql URL, got a mysql: one/,
    );
  });

  it('never puts a secret value into its error message', () => {
    const value = 'sk-ant-short';
    try {
      parseConfig({ ANTHROPIC_API_KEY: secret(z.string().startsWith('sk-ant-api')) }, { ANTHROPIC_API_KEY: value });
      throw new Error('expected a ConfigError');
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toContain('ANTHROPIC_API_KEY');
      expect((error as Error).message).not.toContain(value);
    }
  });
});

describe('crossChecked', () => {
  // A rule between two variables, attached to one of them and kept when the shape is spread into another.
  const pair = {
    USER: crossChecked(z.string().optional(), (config) =>
      config.USER !== undefined && config.PASSWORD === undefined ? [{ variable: 'PASSWORD', message: 'is required with USER' }] : [],
    ),
    PASSWORD: secret(z.string()).optional(),
  };
  const spread = { ...pair, PORT: port().default(1) };

  it('runs the rule on the parsed config of every shape the field is in', () => {
    expect(() => parseConfig(spread, { USER: 'svc' })).toThrow(
      new ConfigError([{ variable: 'PASSWORD', message: 'is required with USER' }]),
    );
    expect(parseConfig(spread, { USER: 'svc', PASSWORD: 'pw-0123456789' })).toEqual({ USER: 'svc', PASSWORD: 'pw-0123456789', PORT: 1 });
    expect(parseConfig(spread, {})).toEqual({ PORT: 1 });
  });

  it('waits until every variable parses on its own', () => {
    expect(() => parseConfig(spread, { USER: 'svc', PORT: 'x' })).toThrow(
      new ConfigError([{ variable: 'PORT', message: 'expected an integer, got "x"' }]),
    );
  });
});

describe('placeholder secrets', () => {
  const secrets = {
    DATABASE_URL: url(['postgres', 'postgresql']),
    INTERNAL_SIGNING_SECRET: secret(z.string().min(32)),
    PORTAL_SESSION_SECRET: secret(z.string().min(32)),
    CUSTOMER_TOOLS_ENCRYPTION_KEY: secret(z.string()),
    CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS: secret(z.string()).optional(),
    NOT_A_SECRET: z.string().optional(),
  };
  const real = {
    DATABASE_URL: 'postgres://h/db',
    INTERNAL_SIGNING_SECRET: 'a1'.repeat(32),
    PORTAL_SESSION_SECRET: 'b2'.repeat(32),
    CUSTOMER_TOOLS_ENCRYPTION_KEY: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
  };
  const problemsWith = (env: Record<string, string>): ConfigIssue[] => {
    try {
      parseConfig(secrets, { ...real, ...env });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).issues;
    }
    return [];
  };

  it('accepts real-looking secrets', () => {
    expect(problemsWith({})).toEqual([]);
  });

  it.each([
    ['INTERNAL_SIGNING_SECRET', 'local-compose-only-replace-with-openssl-rand-hex-32', /placeholder/],
    ['PORTAL_SESSION_SECRET', 'local-compose-only-replace-with-openssl-rand-hex-32-portal', /placeholder/],
    ['CUSTOMER_TOOLS_ENCRYPTION_KEY', 'replace-me:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', /placeholder/],
    ['CUSTOMER_TOOLS_ENCRYPTION_KEY', `k1:${Buffer.alloc(32).toString('base64')}`, /zero bytes/],
    ['CUSTOMER_TOOLS_ENCRYPTION_KEY', `k1:${Buffer.alloc(32).toString('base64url')}`, /zero bytes/],
    [
      'CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS',
      `k0:${Buffer.alloc(32, 1).toString('base64')}, old:${Buffer.alloc(32).toString('base64')}`,
      /zero bytes/,
    ],
    ['INTERNAL_SIGNING_SECRET', '0'.repeat(64), /zero bytes/],
  ])('refuses %s set to %s, naming the variable and not the value', (variable, value, reason) => {
    const issues = problemsWith({ [variable]: value });
    expect(issues).toEqual([{ variable, message: expect.stringMatching(reason) as unknown }]);
    expect(JSON.stringify(issues)).not.toContain(value);
  });

  it('names every placeholder at once, beside the other problems', () => {
    const issues = problemsWith({
      DATABASE_URL: '',
      INTERNAL_SIGNING_SECRET: 'replace-me-please-with-a-real-one!!',
      PORTAL_SESSION_SECRET: 'f'.repeat(8),
    });
    expect(issues.map((issue) => issue.variable).sort()).toEqual(['DATABASE_URL', 'INTERNAL_SIGNING_SECRET', 'PORTAL_SESSION_SECRET']);
  });

  it('refuses one value for two secrets, naming the second', () => {
    expect(problemsWith({ PORTAL_SESSION_SECRET: real.INTERNAL_SIGNING_SECRET })).toEqual([
      { variable: 'PORTAL_SESSION_SECRET', message: 'must differ from INTERNAL_SIGNING_SECRET: each secret has one purpose' },
    ]);
  });

  it('leaves variables that are not secrets alone', () => {
    expect(problemsWith({ NOT_A_SECRET: 'replace-me' })).toEqual([]);
    expect(placeholderSecretProblem('x'.repeat(64))).toBeUndefined();
  });
});

describe('redactConfig', () => {
  it('replaces secrets and URL passwords', () => {
    const config = parseConfig(shape, {
      DATABASE_URL: 'postgres://app:hunter22@db:5432/fin',
      ANTHROPIC_API_KEY: 'sk-ant-api03-abcdef',
    });
    const printed = JSON.stringify(redactConfig(shape, config));
    expect(printed).not.toContain('sk-ant-api03-abcdef');
    expect(printed).not.toContain('hunter22');
    expect(printed).toContain('"ANTHROPIC_API_KEY":"[redacted]"');
    expect(printed).toContain('postgres://app:***@db:5432/fin');
  });
});

describe('loadConfig in a real process', () => {
  it('refuses to start with a placeholder secret, naming the variable, with exit status 78', () => {
    const script = `
      const { loadConfig, secret } = require(${JSON.stringify(path.join(__dirname, '../src'))});
      const { z } = require('zod');
      loadConfig({ INTERNAL_SIGNING_SECRET: secret(z.string().min(32)) });
      console.log('started');
    `;
    const child = spawnSync(process.execPath, ['--conditions=development', '--import', 'tsx', '-e', script], {
      cwd: path.join(__dirname, '..'),
      env: { PATH: process.env.PATH, INTERNAL_SIGNING_SECRET: 'local-compose-only-replace-with-openssl-rand-hex-32' },
      encoding: 'utf8',
    });
    expect(child.status).toBe(78);
    expect(child.stdout).not.toContain('started');
    expect(child.stderr).toMatch(/INTERNAL_SIGNING_SECRET: is a placeholder/);
    expect(child.stderr).not.toContain('local-compose-only-replace-with-openssl-rand-hex-32');
  });

  it('refuses to start, naming the variable, with exit status 78', () => {
    const script = `
      const { loadConfig, url, secret } = require(${JSON.stringify(path.join(__dirname, '../src'))});
      const { z } = require('zod');
      loadConfig({ DATABASE_URL: url(['postgres']), TOKEN: secret(z.string().length(40)) });
      console.log('started');
    `;
    const child = spawnSync(process.execPath, ['--conditions=development', '--import', 'tsx', '-e', script], {
      cwd: path.join(__dirname, '..'),
      env: { PATH: process.env.PATH, TOKEN: 'not-forty-characters-secret' },
      encoding: 'utf8',
    });
    expect(child.status).toBe(78);
    expect(child.stdout).not.toContain('started');
    expect(child.stderr).toContain('DATABASE_URL: is required but not set');
    expect(child.stderr).toContain('TOKEN:');
    expect(child.stderr).not.toContain('not-forty-characters-secret');
  });
});

describe('logConfigShape', () => {
  it('defaults to logging every request at info, and parses the sample rate and the slow threshold', () => {
    expect(parseConfig(logConfigShape(), {})).toEqual({ LOG_LEVEL: 'info', ACCESS_LOG_SAMPLE_RATE: 1, ACCESS_LOG_SLOW_MS: 1_000 });
    expect(parseConfig(logConfigShape(), { LOG_LEVEL: 'warn', ACCESS_LOG_SAMPLE_RATE: ' 0.05 ', ACCESS_LOG_SLOW_MS: '250' })).toEqual({
      LOG_LEVEL: 'warn',
      ACCESS_LOG_SAMPLE_RATE: 0.05,
      ACCESS_LOG_SLOW_MS: 250,
    });
  });

  it.each(['1.5', '-0.1', 'half', '5%'])('refuses ACCESS_LOG_SAMPLE_RATE=%s, naming the variable', (value) => {
    expect(() => parseConfig(logConfigShape(), { ACCESS_LOG_SAMPLE_RATE: value })).toThrow(/ACCESS_LOG_SAMPLE_RATE/);
  });
});
