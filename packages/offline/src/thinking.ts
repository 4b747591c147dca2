// Thinking blocks as the API hands them out and checks them back in. Each block carries a `signature`, "an
// encrypted copy of the full reasoning, which you must pass back unchanged in multi-turn and tool-use
// conversations" (build-with-claude/thinking). On models that bind their blocks (Sonnet 5.5, Opus 5.5, Haiku 5.5:
// build-with-claude/preserved-thinking) the signature also covers the block's prefix — "The top-level system
// prompt, tools, and messages before the block" — and a block whose prefix changed is refused with a 400; a block
// the current model cannot read (another model's) is dropped without an error. Here a signature is an HMAC under a
// key of this process over the model, the prefix and the thinking text as returned.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { apiModel } from './model-rules';
import { type MessagesRequestBody, type RequestContentBlock } from './wire-types';

const KEY = randomBytes(32);
const PREFIX = 'fakesig1';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A block as the prefix check sees it: its content, without breakpoints, citations or empty fields. */
function essence(block: unknown): unknown {
  if (!isRecord(block)) return block;
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(block).sort(([a], [b]) => a.localeCompare(b))) {
    if (key === 'cache_control' || key === 'citations' || key === 'caller' || value === null || value === undefined) continue;
    kept[key] = value;
  }
  return kept;
}

function blocksOf(content: unknown): unknown[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content : [];
}

/** The hash of what comes before block `position` of message `index` (which may be the reply being written). */
export function prefixHash(body: MessagesRequestBody, index: number, precedingBlocks: readonly unknown[]): string {
  const system = body.system === undefined ? [] : blocksOf(body.system);
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ system: system.map(essence), tools: (body.tools ?? []).map(essence) }));
  for (const message of body.messages.slice(0, index)) {
    hash.update(JSON.stringify({ role: message.role, content: blocksOf(message.content).map(essence) }));
  }
  hash.update(JSON.stringify(precedingBlocks.map(essence)));
  return hash.digest('base64url');
}

function mac(...parts: string[]): string {
  return createHmac('sha256', KEY).update(parts.join('\u0000')).digest('base64url');
}

/**
 * The signature of a thinking block the model `model` writes after `prefix`, returned with the text `thinking`:
 * one MAC over the model and the text (the block unchanged), one over the prefix too (the block in its place).
 */
export function signThinking(model: string, prefix: string, thinking: string): string {
  return [PREFIX, Buffer.from(model).toString('base64url'), mac(model, thinking), mac(model, prefix, thinking)].join('.');
}

export interface ThinkingRejection {
  type: 'invalid_request_error';
  message: string;
}

/**
 * Checks every thinking block the request passes back: one whose signature is not the API's, or whose text was
 * changed, is refused; one written by another model is dropped (no error); on models that bind blocks to their
 * conversation, one whose prefix changed is refused in the words of the documentation.
 */
export function checkThinkingBlocks(body: MessagesRequestBody): ThinkingRejection | undefined {
  const rules = apiModel(body.model);
  for (const [index, message] of body.messages.entries()) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    const content: RequestContentBlock[] = message.content;
    for (const [position, block] of content.entries()) {
      if (block.type !== 'thinking') continue;
      const where = `messages.${index}.content.${position}`;
      const invalid = { type: 'invalid_request_error', message: `${where}: Invalid \`signature\` in \`thinking\` block.` } as const;
      const [tag, encodedModel, textMac, placedMac] = (typeof block.signature === 'string' ? block.signature : '').split('.');
      if (tag !== PREFIX || encodedModel === undefined || textMac === undefined || placedMac === undefined) return invalid;
      const writer = Buffer.from(encodedModel, 'base64url').toString();
      const thinking = typeof block.thinking === 'string' ? block.thinking : '';
      if (mac(writer, thinking) !== textMac) return invalid;
      // "If the current model can't read a block, the API drops it from that request without an error."
      if (rules === undefined || apiModel(writer) !== rules || !rules.boundThinking) continue;
      if (mac(writer, prefixHash(body, index, content.slice(0, position)), thinking) !== placedMac) {
        return {
          type: 'invalid_request_error',
          message: `${where}: Invalid \`signature\` in \`thinking\` block. The block is bound to a different conversation. Remove the block, or set \`thinking.block_binding.prefix_mismatch_behavior\` to "drop_block".`,
        };
      }
    }
  }
  return undefined;
}
