// Reading a Messages request the way a stand-in model needs to: what the user last said, what the tools returned,
// which tools were offered. The offline analyst (and the test fakes' handlers) decide their reply from these.
import { type MessagesRequestBody, type RequestContentBlock } from './wire-types';

function textOf(content: string | RequestContentBlock[]): string {
  if (typeof content === 'string') return content;
  return content
    .filter((block) => block.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text as string)
    .join('\n');
}

/** The system prompt as one string ('' when there is none). */
export function systemText(body: MessagesRequestBody): string {
  if (body.system === undefined) return '';
  return typeof body.system === 'string' ? body.system : body.system.map((block) => block.text).join('\n');
}

/**
 * What the model is asked to do: the system prompt and the first user turn, where the engine puts the request's
 * own part (symbols, language, question, client data) after the shared, cached system prompt.
 */
export function briefText(body: MessagesRequestBody): string {
  const first = body.messages[0];
  return first?.role === 'user' ? `${systemText(body)}\n${textOf(first.content)}` : systemText(body);
}

/** The text of the last user message that has any text ('' when none has). */
export function lastUserText(body: MessagesRequestBody): string {
  for (let index = body.messages.length - 1; index >= 0; index--) {
    const message = body.messages[index];
    if (message?.role !== 'user') continue;
    const value = textOf(message.content);
    if (value) return value;
  }
  return '';
}

export interface ToolResultView {
  toolUseId: string;
  /** The tool_use block it answers (from the previous assistant turn), when present. */
  toolName: string | undefined;
  /** The result's text (text blocks joined; a string content as is). */
  text: string;
  isError: boolean;
}

/** The tool_result blocks of the last message, each joined with the name of the tool it answers. */
export function toolResults(body: MessagesRequestBody): ToolResultView[] {
  const last = body.messages.at(-1);
  if (!last || last.role !== 'user' || typeof last.content === 'string') return [];
  const previous = body.messages.at(-2);
  const names = new Map<string, string>();
  if (previous && typeof previous.content !== 'string') {
    for (const block of previous.content) {
      if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') names.set(block.id, block.name);
    }
  }
  return last.content
    .filter((block) => block.type === 'tool_result')
    .map((block) => {
      const toolUseId = String(block.tool_use_id);
      const content = block.content;
      const text = typeof content === 'string' ? content : Array.isArray(content) ? textOf(content as RequestContentBlock[]) : '';
      return { toolUseId, toolName: names.get(toolUseId), text, isError: block.is_error === true };
    });
}

/** Names of the tools the request offers (client tools and server tools alike). */
export function toolNames(body: MessagesRequestBody): string[] {
  return (body.tools ?? []).map((tool) => tool.name);
}

/** The JSON schema of a structured-output request, or undefined when the request asks for free text. */
export function outputSchema(body: MessagesRequestBody): Record<string, unknown> | undefined {
  const format = body.output_config?.format;
  return format && format.type === 'json_schema' ? format.schema : undefined;
}
