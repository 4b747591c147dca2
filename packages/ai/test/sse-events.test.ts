// The body of a streamed Messages API answer read by MessageEventReader gives exactly what the SDK's Stream gives
// for the same bytes, however the bytes are cut into chunks: the same events, pings and comments skipped, and an
// `error` event failing the same way.
import { APIError } from '@anthropic-ai/sdk';
import { Stream } from '@anthropic-ai/sdk/core/streaming';
import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages/messages';
import { MessageEventReader } from '../src/sse-events';

const encoder = new TextEncoder();

/** What the SDK's Stream makes of `bytes` delivered as `chunks`: its events, then its error if it failed. */
async function sdkRead(chunks: Uint8Array[]): Promise<{ events: unknown[]; error?: unknown }> {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  const response = new Response(body, { headers: { 'request-id': 'req_1' } });
  const events: unknown[] = [];
  try {
    for await (const event of Stream.fromSSEResponse<RawMessageStreamEvent>(response, new AbortController())) events.push(event);
    return { events };
  } catch (error) {
    return { events, error };
  }
}

function ourRead(chunks: Uint8Array[]): { events: unknown[]; error?: unknown } {
  const reader = new MessageEventReader(new Headers({ 'request-id': 'req_1' }));
  const events: unknown[] = [];
  const onEvent = (event: RawMessageStreamEvent) => events.push(event);
  try {
    for (const chunk of chunks) reader.push(chunk, onEvent);
    reader.end(onEvent);
    return { events };
  } catch (error) {
    return { events, error };
  }
}

/** `bytes` cut at `cuts` (sorted offsets). */
function cut(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let start = 0;
  for (const at of [...cuts, bytes.length]) {
    out.push(bytes.subarray(start, at));
    start = at;
  }
  return out;
}

const BODIES: Record<string, string> = {
  'events with \\n, a ping and a comment':
    'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","content":[]}}\n\n' +
    ': a comment\n\nevent: ping\ndata: {"type":"ping"}\n\n' +
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Kurs: 190 € — ok"}}\n\n' +
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  'events with \\r\\n and \\r, a BOM, data on two lines and a field without a space':
    '\uFEFFevent: message_start\r\ndata: {"type":"message_start",\r\ndata:"message":{"id":"m2","content":[]}}\r\n\r\n' +
    'event:message_stop\rdata: {"type":"message_stop"}\r\r' +
    'id: 7\nretry: 10\nevent: message_delta\ndata: {"type":"message_delta","delta":{},"usage":{"output_tokens":3}}\n\n',
  'an event without data, data without an event, and a last event without its blank line':
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n' +
    'event: content_block_stop\n\ndata: {"type":"orphan"}\n\nevent: message_stop\ndata: {"type":"message_stop"}',
  'an error event in the middle':
    'event: message_start\ndata: {"type":"message_start","message":{"id":"m3","content":[]}}\n\n' +
    'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n' +
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  'an error event that is not JSON': 'event: error\ndata: upstream exploded\n\n',
};

describe.each(Object.entries(BODIES))('%s', (_name, text) => {
  const bytes = encoder.encode(text);

  it('reads as the SDK reads it, whole', async () => {
    const ours = ourRead([bytes]);
    expect(ours.events.length + (ours.error === undefined ? 0 : 1)).toBeGreaterThan(0);
    expect(ours).toEqual(await sdkRead([bytes]));
  });

  it('reads as the SDK reads it, cut anywhere into two and three chunks (inside \\r\\n and multi-byte characters too)', async () => {
    for (let first = 1; first < bytes.length; first++) {
      const second = Math.min(bytes.length - 1, first + 7);
      for (const cuts of [[first], second > first ? [first, second] : [first]]) {
        const chunks = cut(bytes, cuts);
        const ours = ourRead(chunks);
        expect({ cuts, ...ours }).toEqual({ cuts, ...(await sdkRead(chunks)) });
      }
    }
  });
});

it("fails on an error event with the SDK's APIError, carrying the error type and the response headers", () => {
  const { events, error } = ourRead([encoder.encode(BODIES['an error event in the middle'])]);
  expect(events).toHaveLength(1);
  expect(error).toBeInstanceOf(APIError);
  expect((error as APIError).status).toBeUndefined();
  expect((error as APIError).type).toBe('overloaded_error');
  expect((error as APIError).headers?.get('request-id')).toBe('req_1');
});
