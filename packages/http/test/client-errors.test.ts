import { connect } from 'node:net';
import { ErrorBody } from '@fin/contracts';
import { answerClientErrors } from '../src';
import { captureLogger, listen } from './helpers';

/** Writes `head` on a fresh connection and reads until the server closes it. */
function exchange(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('end', () => resolve(received));
    socket.on('error', (error: NodeJS.ErrnoException) => (received === '' ? reject(error) : resolve(received)));
    socket.write(head, 'latin1');
  });
}

function parse(raw: string): { status: number; contentType: string | undefined; body: unknown } {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
  const contentType = /\r\ncontent-type: ([^\r]+)/i.exec(head)?.[1];
  return { status, contentType, body: JSON.parse(body) as unknown };
}

describe('answerClientErrors', () => {
  it('answers what the HTTP parser refuses with 400 in the spec error body, and closes the connection', async () => {
    const { logger, lines } = captureLogger();
    const server = await listen((_req, res) => void res.end('ok'));
    answerClientErrors(server.server, logger);
    try {
      const cases: [string, string][] = [
        [`GET / HTTP/1.1\r\nHost: x\r\nX-Huge: ${'a'.repeat(20_000)}\r\n\r\n`, 'The request line and headers are too large.'],
        ['GET / HTTP/1.1\r\nHost: x\r\nX-Junk: a\u0001b\r\n\r\n', 'The request is not valid HTTP.'],
        ['POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello', 'The request is not valid HTTP.'],
        ['NOT A REQUEST\r\n\r\n', 'The request is not valid HTTP.'],
      ];
      for (const [head, detail] of cases) {
        const answer = parse(await exchange(server.port, head));
        expect(answer).toEqual({
          status: 400,
          contentType: 'application/json; charset=utf-8',
          body: { detail, status_code: 400, type: 'validation_error' },
        });
        expect(ErrorBody.parse(answer.body)).toEqual(answer.body);
      }
      expect(lines.filter((line) => line.msg === 'request refused by the HTTP parser').map((line) => line.code)).toEqual([
        'HPE_HEADER_OVERFLOW',
        'HPE_INVALID_HEADER_TOKEN',
        'HPE_UNEXPECTED_CONTENT_LENGTH',
        'HPE_INVALID_METHOD',
      ]);
      // A well-formed request on the same server is untouched.
      expect(await (await fetch(server.url)).text()).toBe('ok');
    } finally {
      await server.close();
    }
  });
});
