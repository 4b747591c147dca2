import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError, bool, csv, int, parseConfig, port, redactConfig, secret, url } from '../src';

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
    for (const [raw, expected] of [['false', false], ['0', false], ['off', false], ['TRUE', true], ['1', true]] as const) {
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
