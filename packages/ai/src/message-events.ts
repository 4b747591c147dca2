// A streamed model reply put together from its raw events (`messages.create({ stream: true })`), as the SDK's
// MessageStream puts it together, without a MessageStream: a chat reply keeps its model call open for as long as
// the reply streams, and a MessageStream (its event emitter, promises, listeners and copies of the request) is
// memory per open stream for nothing the engine uses (docs/benchmarks.md, chat-stream).
import type { ContentBlock, Message, RawMessageStreamEvent, Usage as ApiUsage } from '@anthropic-ai/sdk/resources/messages/messages';
import { partialParse } from '@anthropic-ai/sdk/_vendor/partial-json-parser/parser';
import { countTokens } from '@fin/offline';

/** A piece of the reply as it arrives: answer text, or the text of a thinking block. */
export interface StreamedText {
  type: 'text' | 'thinking';
  text: string;
}

export class MessageAssembler {
  #message: Message | undefined;
  /** The JSON of each tool call's input so far, by block index; parsed when the block ends. */
  #inputJson: Map<number, string> | undefined;
  #stopped = false;

  /**
   * Adds one event; returns the text of a text or thinking delta (what the reader shows as it arrives), else
   * undefined.
   */
  add(event: RawMessageStreamEvent): StreamedText | undefined {
    if (event.type === 'message_start') {
      if (this.#message !== undefined) throw new Error(`Unexpected event order, got ${event.type} before receiving "message_stop"`);
      this.#message = event.message;
      return undefined;
    }
    const message = this.#message;
    if (message === undefined) return undefined;
    switch (event.type) {
      case 'message_stop':
        this.#finishInputs();
        this.#stopped = true;
        return undefined;
      case 'message_delta': {
        const { delta, usage } = event;
        message.stop_reason = delta.stop_reason;
        message.stop_sequence = delta.stop_sequence;
        message.stop_details = delta.stop_details;
        message.usage.output_tokens = usage.output_tokens;
        if (delta.container != null) message.container = delta.container;
        // Cumulative whole-message totals, omitted when they do not apply: overwritten when present, never added.
        if (usage.input_tokens != null) message.usage.input_tokens = usage.input_tokens;
        if (usage.cache_creation_input_tokens != null) message.usage.cache_creation_input_tokens = usage.cache_creation_input_tokens;
        if (usage.cache_read_input_tokens != null) message.usage.cache_read_input_tokens = usage.cache_read_input_tokens;
        if (usage.server_tool_use != null) message.usage.server_tool_use = usage.server_tool_use;
        if (usage.output_tokens_details != null) message.usage.output_tokens_details = usage.output_tokens_details;
        return undefined;
      }
      case 'content_block_start':
        message.content.push({ ...event.content_block });
        return undefined;
      case 'content_block_delta': {
        const block = message.content.at(event.index);
        const { delta } = event;
        switch (delta.type) {
          case 'text_delta':
            if (block?.type === 'text') block.text = (block.text || '') + delta.text;
            return { type: 'text', text: delta.text };
          case 'citations_delta':
            if (block?.type === 'text') block.citations = [...(block.citations ?? []), delta.citation];
            return undefined;
          case 'input_json_delta':
            if (block !== undefined && tracksToolInput(block)) {
              this.#inputJson ??= new Map();
              this.#inputJson.set(event.index, (this.#inputJson.get(event.index) ?? '') + delta.partial_json);
            }
            return undefined;
          case 'thinking_delta':
            if (block?.type === 'thinking') block.thinking += delta.thinking;
            return delta.thinking === '' ? undefined : { type: 'thinking', text: delta.thinking };
          case 'signature_delta':
            if (block?.type === 'thinking') block.signature = delta.signature;
            return undefined;
          default:
            return undefined;
        }
      }
      case 'content_block_stop':
        this.#finishInput(event.index);
        return undefined;
      default:
        return undefined;
    }
  }

  /**
   * The whole message once the stream has ended. Like MessageStream.finalMessage(), a stream that ended before
   * its message_stop (or sent nothing) is an error, never a partial message.
   */
  finalMessage(): Message {
    if (this.#message === undefined) throw new Error('request ended without sending any chunks');
    if (!this.#stopped) throw new Error('stream ended without producing a Message with role=assistant');
    return this.#message;
  }

  /**
   * What a stream that ended early (broken, or aborted by us) had cost so far, or undefined before its
   * message_start (the model had not started). The input and cache tokens are message_start's, which the API
   * reports before it writes anything; the output is the last count the stream reported (the API reports it
   * in message_delta, at the end) or, when more, the received text, reasoning and tool input counted with the
   * stand-in's tokenizer approximation (@fin/offline): the output written before the stream broke is billed.
   */
  spentSoFar(): Pick<Message, 'usage'> | undefined {
    const message = this.#message;
    if (message === undefined) return undefined;
    let written = '';
    for (const [index, block] of message.content.entries()) {
      if (block.type === 'text') written += block.text;
      else if (block.type === 'thinking') written += block.thinking;
      else if (tracksToolInput(block)) written += this.#inputJson?.get(index) ?? JSON.stringify(block.input);
    }
    const usage: ApiUsage = { ...message.usage, output_tokens: Math.max(message.usage.output_tokens, countTokens(written)) };
    return { usage };
  }

  #finishInput(index: number): void {
    const json = this.#inputJson?.get(index);
    if (json === undefined) return;
    this.#inputJson?.delete(index);
    const block = this.#message?.content.at(index);
    // As the SDK reads it: lenient about a cut-off input (a reply stopped at max_tokens), {} for none.
    if (block !== undefined && tracksToolInput(block)) block.input = json ? partialParse(json) : {};
  }

  #finishInputs(): void {
    for (const index of [...(this.#inputJson?.keys() ?? [])]) this.#finishInput(index);
  }
}

function tracksToolInput(block: ContentBlock): block is Extract<ContentBlock, { type: 'tool_use' | 'server_tool_use' }> {
  return block.type === 'tool_use' || block.type === 'server_tool_use';
}
