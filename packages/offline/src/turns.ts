// Builders of assistant turns, so a stand-in model's answer reads as the turn it is. The test fakes build their
// scripted replies from the same blocks.
import { apiId } from './ids';
import { type AssistantReply, type ContentScript, type TextScript, type ToolUseScript, type WebSearchCitation } from './wire-types';

/** A text block, optionally citing web search results. */
export function text(value: string, citations?: WebSearchCitation[]): TextScript {
  return citations ? { type: 'text', text: value, citations } : { type: 'text', text: value };
}

/** A client tool call; the id is generated unless given. */
export function toolUse(name: string, input: unknown, id?: string): ToolUseScript {
  return { type: 'tool_use', id: id ?? apiId('toolu'), name, input };
}

/** An assistant turn with the given blocks (stop reason tool_use when one of them is a tool call). */
export function turn(content: ContentScript[]): AssistantReply {
  return { content };
}

/** An assistant turn that is one text block. */
export function textTurn(value: string): AssistantReply {
  return turn([text(value)]);
}

/** A structured-output answer: the value serialised as the single text block (what output_config.format yields). */
export function jsonTurn(value: unknown): AssistantReply {
  return textTurn(JSON.stringify(value));
}
