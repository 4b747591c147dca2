import { spawn } from 'node:child_process';
import path from 'node:path';

// The default destination writes asynchronously; these run a real process so that exiting, a pipe as stdout
// and two loggers sharing it are what they are in production.

interface Run {
  status: number | null;
  lines: string[];
}

function run(body: string): Promise<Run> {
  const script = `
    const { createLogger } = require(${JSON.stringify(path.join(__dirname, '../src'))});
    ${body}
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', '-e', script], {
      cwd: path.join(__dirname, '..'),
      env: { PATH: process.env.PATH },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => (out += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, lines: out.split('\n').filter((line) => line !== '') }));
  });
}

function parsed(lines: string[]): Record<string, unknown>[] {
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('the default stdout destination', () => {
  it('delivers every line of a burst, whole and in order, when the process exits at once afterwards', async () => {
    const { status, lines } = await run(`
      const logger = createLogger({ service: 'burst' });
      for (let i = 0; i < 20000; i++) logger.info({ i, padding: 'x'.repeat(200) }, 'line');
      logger.fatal('exiting');
      process.exit(3);
    `);
    expect(status).toBe(3);
    const records = parsed(lines);
    expect(records).toHaveLength(20001);
    expect(records.slice(0, 20000).map((record) => record.i)).toEqual(Array.from({ length: 20000 }, (_, i) => i));
    expect(records[20000]).toMatchObject({ service: 'burst', level: 'fatal', msg: 'exiting' });
  });

  it('delivers lines with characters of several bytes whole (the buffer counts bytes, not characters)', async () => {
    const { status, lines } = await run(`
      const logger = createLogger({ service: 'utf8' });
      for (let i = 0; i < 3000; i++) logger.info({ i, text: 'é€😀'.repeat(i % 40) }, 'ünïcode');
      setTimeout(() => process.exit(0), 400);
    `);
    expect(status).toBe(0);
    const records = parsed(lines);
    expect(records.map((record) => record.i)).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    expect(records.every((record) => record.msg === 'ünïcode' && record.text === 'é€😀'.repeat((record.i as number) % 40))).toBe(true);
  });

  it('delivers the last lines when the event loop simply ends', async () => {
    const { status, lines } = await run(`
      const logger = createLogger({ service: 'quiet' });
      setTimeout(() => logger.info('after a pause'), 50);
      logger.info('first');
    `);
    expect(status).toBe(0);
    expect(parsed(lines).map((record) => record.msg)).toEqual(['first', 'after a pause']);
  });

  it('never interleaves the lines of two loggers of one process (the standalone process has one per service)', async () => {
    const { lines } = await run(`
      const a = createLogger({ service: 'a' });
      const b = createLogger({ service: 'b' });
      let i = 0;
      const timer = setInterval(() => {
        for (let n = 0; n < 500; n++, i++) {
          a.info({ i, padding: 'a'.repeat(300) }, 'from a');
          b.info({ i, padding: 'b'.repeat(300) }, 'from b');
        }
        if (i >= 10000) { clearInterval(timer); process.exit(0); }
      }, 1);
    `);
    // Every line parses (none was cut by another's write), and each logger's lines are all there in order.
    const records = parsed(lines);
    for (const service of ['a', 'b']) {
      const own = records.filter((record) => record.service === service);
      expect(own.map((record) => record.i)).toEqual(Array.from({ length: 10000 }, (_, i) => i));
    }
  });

  it('delivers the buffered lines and the error when an exception is not caught', async () => {
    const { status, lines } = await run(`
      const logger = createLogger({ service: 'crash' });
      for (let i = 0; i < 5; i++) logger.info({ i }, 'before the crash');
      setImmediate(() => { throw new Error('boom'); });
    `);
    expect(status).toBe(1);
    expect(parsed(lines).map((record) => record.i)).toEqual([0, 1, 2, 3, 4]);
  });

  it('writes a line of a quiet process without waiting for more lines or for the exit', async () => {
    // The process logs one short line (far below the buffer size), then waits until it sees its own line on the
    // pipe's other end: the parent only answers once the line arrived.
    const script = `
      const { createLogger } = require(${JSON.stringify(path.join(__dirname, '../src'))});
      createLogger({ service: 'quiet' }).info('alone');
      process.stdin.once('data', () => process.exit(0));
    `;
    const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', '-e', script], {
      cwd: path.join(__dirname, '..'),
      env: { PATH: process.env.PATH },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    const line = await new Promise<string>((resolve) => {
      child.stdout.on('data', (chunk: string) => {
        out += chunk;
        if (out.includes('\n')) resolve(out);
      });
    });
    child.stdin.end('go');
    await new Promise((resolve) => child.once('close', resolve));
    expect(parsed(line.split('\n').filter((text) => text !== ''))).toEqual([expect.objectContaining({ service: 'quiet', msg: 'alone' })]);
  });
});
