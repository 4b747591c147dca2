import { Writable } from 'node:stream';
import pino from 'pino';
import { createLogger, REDACTED_PATHS, type Logger } from '../src';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return { lines, destination };
}

describe('createLogger', () => {
  it('writes JSON lines carrying the service name and a textual level', () => {
    const { lines, destination } = capture();
    createLogger({ service: 'news', destination }).info({ jobId: 'j1' }, 'job started');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ service: 'news', level: 'info', jobId: 'j1', msg: 'job started' });
  });

  it('redacts API keys, authorization and secret headers wherever they appear', () => {
    const { lines, destination } = capture();
    createLogger({ service: 'gateway', destination }).warn(
      {
        req: { headers: { 'x-api-key': 'fin_live_secretvalue', authorization: 'Bearer t0ken', host: 'api' } },
        tool: { headers: { 'X-Customer-Token': 'abc123' }, name: 'prices' },
        apiKey: 'fin_live_other',
      },
      'rejected',
    );
    const text = JSON.stringify(lines[0]);
    for (const secret of ['fin_live_secretvalue', 'Bearer t0ken', 'abc123', 'fin_live_other']) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('"host":"api"');
    expect(text).toContain('"name":"prices"');
  });
});

describe('redaction', () => {
  // pino's own redaction over the same paths, the reference the compiled redaction must match line for line.
  function reference(destination: Writable) {
    return pino(
      {
        base: { service: 'gateway' },
        redact: { paths: [...REDACTED_PATHS], censor: '[redacted]' },
        timestamp: false,
        formatters: { level: (label) => ({ level: label }) },
      },
      destination,
    );
  }

  function linesOf(write: (logger: Logger) => void, make: (destination: Writable) => Logger): Record<string, unknown>[] {
    const { lines, destination } = capture();
    write(make(destination));
    // The stacks differ by the column of the call that logged them.
    return lines.map(
      ({ time: _time, ...rest }) =>
        JSON.parse(JSON.stringify(rest).replace(/"stack":"(?:[^"\\]|\\.)*"/g, '"stack":""')) as Record<string, unknown>,
    );
  }

  class HttpError extends Error {
    headers = { 'x-api-key': 'fin_live_in_error', accept: 'application/json' };
    token = 'tok_in_error';
    status = 401;
  }

  const objects: Record<string, unknown>[] = [
    { requestId: 'r1', method: 'POST', path: '/api/products/news', status: 200, durationMs: 1.25 },
    { apiKey: 'k', api_key: 'k', password: 'p', secret: 's', token: 't', authorization: 'a', other: 'kept' },
    { apiKey: null, token: 42, secret: { nested: true }, password: ['a'] },
    {
      req: {
        headers: {
          'x-api-key': 'k',
          authorization: 'Bearer x',
          cookie: 'c',
          'proxy-authorization': 'p',
          'x-fin-signature': 's',
          host: 'api',
        },
        url: '/x',
      },
    },
    { headers: { 'x-api-key': 'k', accept: '*/*' }, nested: { token: 't', password: 'p', keep: 1, headers: { cookie: 'c' } } },
    {
      tool: { headers: { 'X-Customer-Token': 'abc' }, name: 'prices', token: 't' },
      config: { ANTHROPIC_API_KEY: 'sk-ant', PORT: 8080, secret: 'x' },
    },
    {
      list: [{ token: 'in array' }],
      deep: { a: { token: 'two levels down stays' } },
      when: new Date(0),
      nothing: null,
      missing: undefined,
    },
    { err: new HttpError('refused') },
    { err: Object.assign(new Error('with cause', { cause: new Error('inner') }), { authorization: 'Bearer y', code: 'E1' }) },
    { error: Object.assign(new Error('not the err key'), { token: 't', code: 'E2' }) },
    { headers: 'not an object', tool: 'x', config: null, nested: { headers: 'text' } },
  ];

  it.each(objects.map((object, index) => [index, object]))('writes object %i exactly as pino redact would', (_index, object) => {
    const write = (logger: Logger) => logger.warn(object, 'message');
    expect(linesOf(write, (destination) => createLogger({ service: 'gateway', destination }))).toEqual(
      linesOf(write, (destination) => reference(destination)),
    );
  });

  it('redacts child bindings and a logged error like pino redact', () => {
    const write = (logger: Logger) => {
      logger.child({ token: 't', requestId: 'r2', upstream: { headers: { authorization: 'x' } } }).info({ ok: true }, 'child');
      logger.error(new HttpError('direct'));
    };
    expect(linesOf(write, (destination) => createLogger({ service: 'gateway', destination }))).toEqual(
      linesOf(write, (destination) => reference(destination)),
    );
  });

  it('leaves the logged objects unchanged', () => {
    const { destination } = capture();
    const object = { token: 't', req: { headers: { 'x-api-key': 'k' } }, tool: { headers: { a: 'b' } } };
    const before = structuredClone(object);
    createLogger({ service: 'gateway', destination }).info(object, 'x');
    expect(object).toEqual(before);
  });
});
