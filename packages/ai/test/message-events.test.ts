import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import type { Message, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages/messages';
import { MessageAssembler } from '../src/message-events';

const START: RawMessageStreamEvent = {
  type: 'message_start',
  message: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-5-5',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: {
      input_tokens: 12,
      output_tokens: 1,
      cache_creation_input_tokens: null,
      cache_read_input_tokens: null,
      server_tool_use: null,
      service_tier: null,
    },
  } as unknown as Message,
};

const delta = (stopReason: string, usage: Record<string, unknown>): RawMessageStreamEvent =>
  ({
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: null, stop_details: null, container: null },
    usage,
  }) as unknown as RawMessageStreamEvent;

const SEQUENCES: Record<string, RawMessageStreamEvent[]> = {
  'text in pieces, with a citation': [
    START,
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '', citations: null } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Apple ' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'trades at 190.' } },
    {
      type: 'content_block_delta',
      index: 0,
      delta: {
        type: 'citations_delta',
        citation: { type: 'web_search_result_location', url: 'https://example.com/a', title: 'A', encrypted_index: 'x', cited_text: 'c' },
      },
    },
    { type: 'content_block_stop', index: 0 },
    delta('end_turn', { output_tokens: 9, input_tokens: 14, cache_read_input_tokens: 3 }),
    { type: 'message_stop' },
  ] as RawMessageStreamEvent[],
  'a sentence, then a tool call whose input arrives in pieces': [
    START,
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '', citations: null } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me look.' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'market_data', input: {} } },
    { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"sym' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: 'bol": "AAPL", "kind": "overview"}' } },
    { type: 'content_block_stop', index: 1 },
    { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_2', name: 'market_data', input: {} } },
    { type: 'content_block_stop', index: 2 },
    delta('tool_use', { output_tokens: 30, server_tool_use: { web_search_requests: 1 } }),
    { type: 'message_stop' },
  ] as RawMessageStreamEvent[],
  'thinking with a signature, and a tool input cut off at max_tokens': [
    START,
    { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Hmm. ' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Quotes first.' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_3', name: 'market_data', input: {} } },
    { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"symbol": "MS' } },
    delta('max_tokens', { output_tokens: 64 }),
    { type: 'message_stop' },
  ] as RawMessageStreamEvent[],
};

/** What the SDK's MessageStream makes of the same events (it reads them as JSON lines). */
async function sdkFinalMessage(events: readonly RawMessageStreamEvent[]): Promise<Message> {
  const lines = new TextEncoder().encode(events.map((event) => `${JSON.stringify(event)}\n`).join(''));
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(lines);
      controller.close();
    },
  });
  return MessageStream.fromReadableStream(body).finalMessage();
}

function assembled(events: readonly RawMessageStreamEvent[]): { message: Message; texts: string[] } {
  const assembler = new MessageAssembler();
  const texts: string[] = [];
  for (const event of structuredClone(events) as RawMessageStreamEvent[]) {
    const piece = assembler.add(event);
    if (piece?.type === 'text') texts.push(piece.text);
  }
  return { message: assembler.finalMessage(), texts };
}

/** As the next round sends it: enumerable fields only (the SDK adds hidden helpers such as parsed_output). */
const wire = (message: Message) => JSON.parse(JSON.stringify(message)) as unknown;

describe('MessageAssembler', () => {
  it.each(Object.keys(SEQUENCES))('puts together the message the SDK MessageStream does: %s', async (name) => {
    const events = SEQUENCES[name]!;
    const { parsed_output: _parsed, ...expected } = wire(await sdkFinalMessage(events)) as Message & { parsed_output?: unknown };
    expect(wire(assembled(events).message)).toEqual(expected);
  });

  it('gives the text of each text delta as it arrives', () => {
    expect(assembled(SEQUENCES['text in pieces, with a citation']!).texts).toEqual(['Apple ', 'trades at 190.']);
  });

  it('refuses a stream that ended before message_stop, or sent nothing, as the SDK does', async () => {
    const cut = SEQUENCES['text in pieces, with a citation']!.slice(0, -1);
    await expect(sdkFinalMessage(cut)).rejects.toThrow('stream ended without producing a Message with role=assistant');
    const assembler = new MessageAssembler();
    for (const event of structuredClone(cut)) assembler.add(event);
    expect(() => assembler.finalMessage()).toThrow('stream ended without producing a Message with role=assistant');
    expect(() => new MessageAssembler().finalMessage()).toThrow('request ended without sending any chunks');
  });

  it('refuses a second message_start before message_stop', () => {
    const assembler = new MessageAssembler();
    assembler.add(structuredClone(START));
    expect(() => assembler.add(structuredClone(START))).toThrow('Unexpected event order');
  });
});
