import {
  AnalysisDoneEvent,
  AnalysisStreamEvents,
  ChatStreamEvent,
  ChatStreamEvents,
  ErrorBody,
  JobEventsHeaders,
  JobStreamEvents,
  formatSse,
} from '../src';
import { UUID, ok, rejected } from './helpers';

const samples = {
  token: { type: 'token', content: 'Hel' },
  node_start: { type: 'node_start', node: 'research' },
  tool_start: { type: 'tool_start', tool: 'market_data' },
  tool_end: { type: 'tool_end', tool: 'market_data' },
  progress: { type: 'progress', content: 'Looking up the quote.' },
  done: { type: 'done', conversation_id: UUID },
} as const;

describe('chat stream events', () => {
  it('has exactly the spec events plus progress (the model between tool calls) and error', () => {
    expect(Object.keys(ChatStreamEvents).sort()).toEqual(['done', 'error', 'node_start', 'progress', 'token', 'tool_end', 'tool_start']);
  });

  it.each(Object.entries(samples))('%s: the payload type equals the event name', (name, payload) => {
    const schema = ChatStreamEvents[name as keyof typeof samples];
    expect(schema.shape.type.value).toBe(name);
    expect(ok(schema, payload)).toEqual(payload);
    expect(ok(ChatStreamEvent, payload)).toEqual(payload);
    const otherName = name === 'token' ? 'done' : 'token';
    rejected(schema, { ...payload, type: otherName });
  });

  it('rejects an unknown event type and a done event without a UUID', () => {
    rejected(ChatStreamEvent, { type: 'thinking', content: 'x' });
    rejected(ChatStreamEvent, { type: 'done', conversation_id: 'abc' });
    rejected(ChatStreamEvent, { type: 'token' });
  });

  it('ends a failed stream with the standard error body', () => {
    expect(ChatStreamEvents.error).toBe(ErrorBody);
    ok(ChatStreamEvents.error, { detail: 'The model is overloaded', status_code: 503, type: 'service_unavailable' });
  });
});

describe('analysis stream events', () => {
  it('has synthesis_chunk, done and error', () => {
    expect(Object.keys(AnalysisStreamEvents).sort()).toEqual(['done', 'error', 'synthesis_chunk']);
    expect(AnalysisStreamEvents.error).toBe(ErrorBody);
  });

  it('parses chunks and requires done to say completed', () => {
    expect(ok(AnalysisStreamEvents.synthesis_chunk, { chunk: '## Summary' })).toEqual({ chunk: '## Summary' });
    expect(ok(AnalysisDoneEvent, { job_id: UUID, status: 'completed' })).toEqual({ job_id: UUID, status: 'completed' });
    rejected(AnalysisDoneEvent, { job_id: UUID, status: 'failed' });
    rejected(AnalysisDoneEvent, { job_id: 'x', status: 'completed' });
  });
});

describe('formatSse', () => {
  it('produces one event line, one data line of JSON and a blank line', () => {
    expect(formatSse('token', { type: 'token', content: 'Hi' })).toBe('event: token\ndata: {"type":"token","content":"Hi"}\n\n');
  });

  it('keeps line breaks inside the data escaped on one line', () => {
    const frame = formatSse('synthesis_chunk', { chunk: 'line 1\nline 2\r\n' });
    expect(frame).toBe('event: synthesis_chunk\ndata: {"chunk":"line 1\\nline 2\\r\\n"}\n\n');
    expect(frame.split('\n')).toHaveLength(4);
  });

  it('puts an id line first when the event has an id, and refuses ids that would break the framing', () => {
    expect(formatSse('done', { type: 'done' }, 'abc:7')).toBe('id: abc:7\nevent: done\ndata: {"type":"done"}\n\n');
    expect(() => formatSse('done', {}, 'a\nevent: x')).toThrow(TypeError);
    expect(() => formatSse('done', {}, '')).toThrow(TypeError);
  });

  it('refuses event names that would break the framing and data JSON cannot hold', () => {
    expect(() => formatSse('token\ndata: x', {})).toThrow(TypeError);
    expect(() => formatSse('', {})).toThrow(TypeError);
    expect(() => formatSse('token', undefined)).toThrow(TypeError);
  });
});

describe('job stream events', () => {
  it('are status, progress, result and error', () => {
    expect(Object.keys(JobStreamEvents)).toEqual(['status', 'progress', 'result', 'error']);
  });

  it('carry only an unfinished status in `status`: a finished job ends with result or error', () => {
    ok(JobStreamEvents.status, { job_id: UUID, status: 'running', progress: 45, currently_working_on: 'Looking up market data' });
    rejected(JobStreamEvents.status, { job_id: UUID, status: 'completed', progress: 100, currently_working_on: 'Completed' });
    rejected(JobStreamEvents.progress, { job_id: UUID, progress: 101, currently_working_on: 'x' });
  });

  it('end with the result as the result URL answers it, or the error body of the job with its id', () => {
    ok(JobStreamEvents.result, { job_id: UUID, status: 'completed', result: { format: 'markdown', content: 'Text', citations: [] } });
    rejected(JobStreamEvents.result, { job_id: UUID, status: 'failed', result: {} });
    ok(JobStreamEvents.error, { job_id: UUID, detail: 'The model did not answer in time.', status_code: 504, type: 'gateway_timeout' });
    rejected(JobStreamEvents.error, { job_id: UUID, detail: 'x', status_code: 504, type: 'timeout' });
  });

  it('resume from a Last-Event-ID that is an event number, and nothing else', () => {
    ok(JobEventsHeaders, { 'Last-Event-ID': '2004' });
    ok(JobEventsHeaders, {});
    for (const bad of ['abc', '-1', '1.5', '', '1234567890']) rejected(JobEventsHeaders, { 'Last-Event-ID': bad });
  });
});
