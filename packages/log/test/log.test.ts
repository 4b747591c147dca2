import { Writable } from 'node:stream';
import { createLogger } from '../src';

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
