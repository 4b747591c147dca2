// Prompt caching as the Messages API bills it (Anthropic's prompt-caching documentation), so that what our
// requests would cost can be measured without the API: offline mode, the test fakes and `npm run bench --
// ai-cost` all bill through this.
//
// - A request's prompt is one sequence: tools, then system, then messages. A `cache_control` breakpoint on a block
//   marks the prefix ending there as cacheable; at most 4 per request (validation.ts refuses more).
// - A cache entry is a prefix's hash, kept per API key (organisations do not share caches), for 5 minutes or
//   (`ttl: "1h"`) an hour from when it was last written or read.
// - A read: for each breakpoint, the API checks the block boundaries from it back to about 20 blocks before it;
//   the longest cached prefix found is read (`cache_read_input_tokens`, billed at 0.1× input).
// - A write: the prefix up to the last breakpoint, past what was read, is written
//   (`cache_creation_input_tokens`, 1.25× input for 5 minutes, 2× for an hour), each stretch under the
//   lifetime of the breakpoint that ends it. A prefix shorter than the model's minimum is neither written nor read.
// - `input_tokens` is the rest: what follows the last breakpoint, and all of it when nothing is cached.
// - Invalidation follows the documented levels: a change to the tools voids everything; to the system prompt
//   (or the structured-output schema, which the API compiles into it) voids the system prompt and messages; to
//   tool_choice or thinking voids the messages only. That falls out of where each sits in the hashed sequence.
import { createHash } from 'node:crypto';
import { minimumCacheableTokens, modelTokens } from './model-rules';
import { countTokens, WEB_SEARCH_RESULT_TOKENS } from './tokens';
import { type MessagesRequestBody, type RequestContentBlock } from './wire-types';

export type CacheTtl = '5m' | '1h';

const TTL_MS: Record<CacheTtl, number> = { '5m': 5 * 60_000, '1h': 60 * 60_000 };

/** Block boundaries before a breakpoint at which the API looks for a cached prefix. */
const LOOKBACK_BLOCKS = 20;

/**
 * The tokens the API adds to a request that offers tools (its tool-use system prompt), by tool_choice: Anthropic
 * lists 346 for auto and none, 313 for any and tool, on current models.
 */
function toolUseOverhead(body: MessagesRequestBody): number {
  if (!body.tools?.length) return 0;
  const type = body.tool_choice?.type ?? 'auto';
  return type === 'any' || type === 'tool' ? 313 : 346;
}

/** Tokens a message's role and framing take. */
const MESSAGE_OVERHEAD_TOKENS = 3;

export interface BilledInput {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  ephemeral_5m_input_tokens: number;
  ephemeral_1h_input_tokens: number;
}

interface Boundary {
  /** Hash of the whole prompt up to and including this block. */
  hash: string;
  /** Tokens up to and including this block. */
  tokens: number;
  /** The block's breakpoint lifetime, when it carries cache_control. */
  breakpoint?: CacheTtl;
  /** Whether a read may end here (a block of the request; not the parameters between the levels). */
  block: boolean;
}

function breakpointOf(block: Record<string, unknown>): CacheTtl | undefined {
  const control = block.cache_control;
  if (typeof control !== 'object' || control === null) return undefined;
  return (control as { ttl?: unknown }).ttl === '1h' ? '1h' : '5m';
}

/** A block as it counts for the prefix: everything but its cache_control (moving a breakpoint changes nothing). */
function canonical(block: Record<string, unknown>): string {
  if (block.cache_control === undefined) return JSON.stringify(block);
  const { cache_control: _ignored, ...rest } = block;
  return JSON.stringify(rest);
}

/** Token counts of long strings seen lately: a tool loop resends the same prompt, tools and results every round. */
const counted = new Map<string, number>();
const MAX_COUNTED = 2_000;

function memoCount(text: string): number {
  if (text.length < 256) return countTokens(text);
  let tokens = counted.get(text);
  if (tokens === undefined) {
    tokens = countTokens(text);
    if (counted.size >= MAX_COUNTED) counted.clear();
    counted.set(text, tokens);
  }
  return tokens;
}

function textOfContent(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return JSON.stringify(content ?? '');
  return (content as unknown[])
    .map((part) => {
      const text = typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined;
      return typeof text === 'string' ? text : JSON.stringify(part);
    })
    .join('\n');
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The tokens one content block adds to the prompt. */
function blockTokens(block: RequestContentBlock): number {
  switch (block.type) {
    case 'text':
      return memoCount(block.text ?? '');
    case 'tool_use':
    case 'server_tool_use':
      return memoCount(`${block.name ?? ''} ${JSON.stringify(block.input ?? {})}`);
    case 'tool_result':
      return memoCount(textOfContent(block.content)) + 2;
    case 'web_search_tool_result': {
      if (!Array.isArray(block.content)) return 10;
      return (block.content as Array<{ title?: unknown; url?: unknown }>).reduce<number>(
        (sum, result) => sum + WEB_SEARCH_RESULT_TOKENS + memoCount(`${stringOf(result.title)} ${stringOf(result.url)}`),
        0,
      );
    }
    case 'thinking':
      return memoCount(stringOf(block.thinking));
    default:
      return memoCount(canonical(block));
  }
}

function contentBlocks(content: string | RequestContentBlock[]): RequestContentBlock[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

/** The prompt as the sequence the cache hashes: tools, system, messages, with the parameters of each level. */
function boundaries(body: MessagesRequestBody): Boundary[] {
  const list: Boundary[] = [];
  let hash = '';
  let tokens = 0;
  const add = (text: string, added: number, breakpoint: CacheTtl | undefined, block: boolean) => {
    hash = createHash('sha256').update(hash).update('\u0000').update(text).digest('base64');
    // Counted by the older tokenizer, scaled to the model's (Haiku 5.5 counts about 30 % more for the same text).
    tokens += modelTokens(body.model, added);
    list.push({ hash, tokens, breakpoint, block });
  };
  for (const tool of body.tools ?? []) add(canonical(tool), memoCount(canonical(tool)), breakpointOf(tool), true);
  // The structured-output schema is compiled into the system prompt: it sits at the system level.
  const format = body.output_config?.format;
  add(`format:${JSON.stringify(format ?? null)}`, format ? memoCount(JSON.stringify(format)) : 0, undefined, false);
  const system =
    body.system === undefined ? [] : typeof body.system === 'string' ? [{ type: 'text' as const, text: body.system }] : body.system;
  for (const block of system) add(canonical(block), memoCount(block.text), breakpointOf(block), true);
  // tool_choice and thinking sit at the messages level, with the tool-use prompt whose size depends on the first.
  const effort = body.output_config?.effort;
  add(
    `choice:${JSON.stringify([body.tool_choice ?? null, body.thinking ?? null, effort ?? null])}`,
    toolUseOverhead(body),
    undefined,
    false,
  );
  for (const message of body.messages) {
    contentBlocks(message.content).forEach((block, position) => {
      const overhead = position === 0 ? MESSAGE_OVERHEAD_TOKENS : 0;
      add(`${message.role}:${canonical(block)}`, blockTokens(block) + overhead, breakpointOf(block), true);
    });
  }
  return list;
}

/** Every token of the request's prompt (count_tokens, and input_tokens without caching). */
export function promptTokens(body: MessagesRequestBody): number {
  return boundaries(body).at(-1)?.tokens ?? 0;
}

interface Entry {
  expiresAt: number;
  ttlMs: number;
}

const MAX_ENTRIES_PER_KEY = 50_000;

export interface PromptCacheOptions {
  /** The clock (ms), for tests of the lifetimes. */
  now?: () => number;
}

/** The cached prefixes of every API key the fake has seen, and the billing of a request against them. */
export class PromptCache {
  private readonly keys = new Map<string, Map<string, Entry>>();
  private readonly now: () => number;

  constructor(options: PromptCacheOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  /** Bills `body` for `apiKey`, reading and writing the cache as the API would. */
  bill(apiKey: string, body: MessagesRequestBody): BilledInput {
    return this.price(apiKey, body, true);
  }

  /**
   * What `bill` would bill now, without reading or writing the cache (no lifetime renewed, nothing written): the
   * input a request counts against the rate limits before it is answered (rate-limits.ts).
   */
  quote(apiKey: string, body: MessagesRequestBody): BilledInput {
    return this.price(apiKey, body, false);
  }

  /** Forgets every cached prefix. */
  clear(): void {
    this.keys.clear();
  }

  private price(apiKey: string, body: MessagesRequestBody, commit: boolean): BilledInput {
    const list = boundaries(body);
    const total = list.at(-1)?.tokens ?? 0;
    const uncached: BilledInput = {
      input_tokens: total,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      ephemeral_5m_input_tokens: 0,
      ephemeral_1h_input_tokens: 0,
    };
    const breakpoints = list.flatMap((boundary, index) =>
      boundary.breakpoint ? [{ index, tokens: boundary.tokens, ttl: boundary.breakpoint, hash: boundary.hash }] : [],
    );
    const minimum = minimumCacheableTokens(body.model);
    if ((breakpoints.at(-1)?.tokens ?? 0) < minimum) return uncached;

    const now = this.now();
    const entries = this.entriesOf(apiKey, now);
    let read = 0;
    let readEntry: Entry | undefined;
    for (const { index } of breakpoints) {
      // The boundaries from the breakpoint back to LOOKBACK_BLOCKS before it, nearest first.
      for (const boundary of list.slice(Math.max(0, index - LOOKBACK_BLOCKS), index + 1).reverse()) {
        if (!boundary.block || boundary.tokens <= read) continue;
        const entry = entries.get(boundary.hash);
        if (entry && entry.expiresAt > now) {
          read = boundary.tokens;
          readEntry = entry;
          break;
        }
      }
    }
    if (readEntry && commit) readEntry.expiresAt = now + readEntry.ttlMs;

    const billed = { ...uncached, input_tokens: total - read, cache_read_input_tokens: read };
    let written = read;
    for (const { tokens, ttl, hash } of breakpoints) {
      if (tokens < minimum || tokens <= written) continue;
      const stretch = tokens - written;
      if (ttl === '1h') billed.ephemeral_1h_input_tokens += stretch;
      else billed.ephemeral_5m_input_tokens += stretch;
      billed.cache_creation_input_tokens += stretch;
      written = tokens;
      if (commit) entries.set(hash, { expiresAt: now + TTL_MS[ttl], ttlMs: TTL_MS[ttl] });
    }
    billed.input_tokens = total - written;
    return billed;
  }

  private entriesOf(apiKey: string, now: number): Map<string, Entry> {
    let entries = this.keys.get(apiKey);
    if (!entries) {
      entries = new Map();
      this.keys.set(apiKey, entries);
    }
    if (entries.size >= MAX_ENTRIES_PER_KEY) {
      for (const [hash, entry] of entries) if (entry.expiresAt <= now) entries.delete(hash);
      // Still full of live entries (a long benchmark): the oldest written go first.
      for (const hash of entries.keys()) {
        if (entries.size < MAX_ENTRIES_PER_KEY / 2) break;
        entries.delete(hash);
      }
    }
    return entries;
  }
}
