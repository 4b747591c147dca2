import { parseConfig } from '@fin/config';
import { createLogger } from '@fin/log';
import { chatConfigShape, checkChatConfig } from '../src/config';

const required = {
  DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/chat',
  INTERNAL_SIGNING_SECRET: 'chat-config-test-signing-secret-0123456789',
  CUSTOMER_TOOLS_ENCRYPTION_KEY: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
};

/** A real logger whose lines are kept, to read what the start-up warned about. */
function recordingLogger() {
  const lines: { level: string; msg: string; CHAT_DB_POOL_SIZE?: number }[] = [];
  const logger = createLogger({
    service: 'chat-config-test',
    destination: { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) },
  });
  return { logger, lines };
}

describe('chat pool size', () => {
  it('is DATABASE_POOL_MAX, with no warning', () => {
    const config = parseConfig(chatConfigShape, { ...required, DATABASE_POOL_MAX: '7' });
    expect([config.DATABASE_POOL_MAX, config.CHAT_DB_POOL_SIZE]).toEqual([7, undefined]);
    const { logger, lines } = recordingLogger();
    checkChatConfig(config, logger);
    expect(lines).toEqual([]);
  });

  it('still reads the deprecated CHAT_DB_POOL_SIZE, and warns that it is deprecated', () => {
    const config = parseConfig(chatConfigShape, { ...required, CHAT_DB_POOL_SIZE: '4' });
    expect(config.CHAT_DB_POOL_SIZE).toBe(4);
    const { logger, lines } = recordingLogger();
    checkChatConfig(config, logger);
    expect(lines).toEqual([
      expect.objectContaining({ level: 'warn', CHAT_DB_POOL_SIZE: 4, msg: expect.stringContaining('set DATABASE_POOL_MAX instead') }),
    ]);
  });
});
