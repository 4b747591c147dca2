import { SseParser } from '../src/sse';
import { readSse } from '../src/sse';

function parseAll(chunks: string[]) {
  const parser = new SseParser();
  return chunks.flatMap((chunk) => parser.feed(chunk));
}

function bodyOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

describe('SseParser', () => {
  it('reads event, data and id, and names an event without `event:` message', () => {
    expect(parseAll(['id: r:1\nevent: token\ndata: {"a":1}\n\ndata: plain\n\n'])).toEqual([
      { event: 'token', data: '{"a":1}', id: 'r:1' },
      { event: 'message', data: 'plain', id: 'r:1' },
    ]);
  });

  it('joins multi-line data with line feeds and strips one leading space only', () => {
    expect(parseAll(['data: first\ndata:  second\ndata:third\ndata\n\n'])).toEqual([
      { event: 'message', data: 'first\n second\nthird\n', id: undefined },
    ]);
  });

  it('ignores comments (keep-alives) and unknown fields', () => {
    expect(parseAll([': keep-alive\n\n:another\nfoo: bar\nevent: done\ndata: {}\n\n'])).toEqual([
      { event: 'done', data: '{}', id: undefined },
    ]);
  });

  it('accepts CRLF, CR and LF line ends, also a CRLF split between two chunks', () => {
    expect(parseAll(['event: a\r\ndata: 1\r', '\n\r', '\nevent: b\rdata: 2\r\r', 'data: 3\n\n'])).toEqual([
      { event: 'a', data: '1', id: undefined },
      { event: 'b', data: '2', id: undefined },
      { event: 'message', data: '3', id: undefined },
    ]);
  });

  it('keeps fields split anywhere across chunks', () => {
    const text = 'id: 7\nevent: token\ndata: {"content":"héllo"}\n\n';
    const chunks = Array.from({ length: text.length }, (_, index) => text.slice(index, index + 1));
    expect(parseAll(chunks)).toEqual([{ event: 'token', data: '{"content":"héllo"}', id: '7' }]);
  });

  it('does not dispatch an event without data, but its id still counts', () => {
    const parser = new SseParser();
    expect(parser.feed('id: 5\nevent: ping\n\n')).toEqual([]);
    expect(parser.lastEventId).toBe('5');
    expect(parser.feed('data: x\n\n')).toEqual([{ event: 'message', data: 'x', id: '5' }]);
  });

  it('ignores an id containing NUL, reads retry only when it is digits, and resets the id with an empty one', () => {
    const parser = new SseParser();
    expect(parser.feed('id: 1\nretry: 1500\ndata: a\n\nid: bad\0id\nretry: soon\ndata: b\n\nid\ndata: c\n\n')).toEqual([
      { event: 'message', data: 'a', id: '1' },
      { event: 'message', data: 'b', id: '1' },
      { event: 'message', data: 'c', id: undefined },
    ]);
    expect(parser.retryMs).toBe(1500);
  });

  it('drops a byte order mark at the start of the stream only', () => {
    expect(parseAll(['\uFEFFdata: a\n\n', '\uFEFFdata: b\n\n'])).toEqual([{ event: 'message', data: 'a', id: undefined }]);
  });

  it('reads a body whose chunks split a multi-byte character, and drops an event cut off at the end', async () => {
    const bytes = new TextEncoder().encode('event: token\ndata: {"content":"€"}\n\nevent: token\ndata: {"content":"cut"}\n');
    const split = bytes.indexOf(0xe2) + 1;
    const messages = [];
    for await (const message of readSse(bodyOf([bytes.slice(0, split), bytes.slice(split)]))) messages.push(message);
    expect(messages).toEqual([{ event: 'token', data: '{"content":"€"}', id: undefined }]);
  });
});
