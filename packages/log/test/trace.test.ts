import { Writable } from 'node:stream';
import { childSpan, createLogger, currentTrace, formatTraceparent, parseTraceparent, runInSpan, traceHeaders } from '../src';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('W3C trace context', () => {
  it('parses a valid traceparent and formats it back unchanged', () => {
    const header = `00-${TRACE}-${SPAN}-01`;
    expect(parseTraceparent(header)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
    expect(formatTraceparent(parseTraceparent(header)!)).toBe(header);
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.sampled).toBe(false);
  });

  it('reads a later version by its first four fields, as the specification asks', () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-what-comes-later`)).toMatchObject({ traceId: TRACE, spanId: SPAN });
  });

  it.each([
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['a short trace id', `00-${TRACE.slice(2)}-${SPAN}-01`],
    ['extra fields on version 00', `00-${TRACE}-${SPAN}-01-extra`],
    ['garbage', 'not a trace'],
  ])('ignores %s (a new trace starts instead)', (_case, header) => {
    expect(parseTraceparent(header)).toBeUndefined();
  });

  it('continues the parent trace in a child span with a new span id, or starts a new trace', () => {
    const parent = parseTraceparent(`00-${TRACE}-${SPAN}-01`);
    const child = childSpan(parent);
    expect(child.traceId).toBe(TRACE);
    expect(child.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(child.spanId).not.toBe(SPAN);
    const root = childSpan();
    expect(root.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(root.traceId).not.toBe(TRACE);
  });

  it('keeps the span across awaits and gives it to outgoing headers and every log line inside it', async () => {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
        done();
      },
    });
    const logger = createLogger({ service: 'test', destination });
    const span = childSpan(parseTraceparent(`00-${TRACE}-${SPAN}-01`));
    await runInSpan(span, async () => {
      await new Promise((resolve) => setImmediate(resolve));
      expect(currentTrace()).toBe(span);
      expect(traceHeaders()).toEqual({ traceparent: `00-${TRACE}-${span.spanId}-01` });
      logger.child({ jobId: 'j1' }).info('inside');
    });
    logger.info('outside');
    expect(currentTrace()).toBeUndefined();
    expect(traceHeaders()).toEqual({});
    expect(lines[0]).toMatchObject({ msg: 'inside', trace_id: TRACE, span_id: span.spanId, jobId: 'j1' });
    expect(lines[1]).not.toHaveProperty('trace_id');
  });
});
