import { z } from 'zod';
import type { RetrievedDocument } from './citations';

export interface ToolContext {
  signal: AbortSignal;
}

/** What a tool hands back to the model, plus the URLs it returned (the only URLs a result may cite). */
export interface ToolOutput {
  content: unknown;
  urls?: readonly string[];
  /** The documents the result is made of, with the text the model is shown of each: what citations may quote. */
  documents?: readonly RetrievedDocument[];
}

/** A tool we execute: the model sees its name, description and input schema; we validate the input before running it. */
export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  input: S;
  /** Per-call time limit (default 10 s). */
  timeoutMs?: number;
  /** Largest serialized result handed to the model (default 32 KiB); longer results are refused. */
  maxResultBytes?: number;
  execute(input: z.output<S>, context: ToolContext): Promise<ToolOutput>;
}

export function defineTool<S extends z.ZodType>(tool: ToolDefinition<S>): ToolDefinition<S> {
  if (!/^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/.test(tool.name)) throw new Error(`Invalid tool name "${tool.name}"`);
  return tool;
}

// Converted once per schema: every model round sends the tools, and the SDK keeps each round's request for as
// long as its stream is open (a fresh conversion per run was a copy of every description per open chat stream).
const inputSchemas = new WeakMap<z.ZodType, Readonly<Record<string, unknown>>>();

/** The JSON Schema the API receives for a tool's input (shared: never modify it). */
export function toolInputSchema(tool: ToolDefinition): Readonly<Record<string, unknown>> {
  let schema = inputSchemas.get(tool.input);
  if (schema === undefined) {
    const converted = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    delete converted.$schema;
    schema = converted;
    inputSchemas.set(tool.input, schema);
  }
  return schema;
}

export type ToolProduct = 'news' | 'stock-report' | 'analysis' | 'chat';

/**
 * Where a run gets a tenant's customer tools: the customer-tools service implements this (enabled tools of the
 * tenant that allow the product, each wrapped as a ToolDefinition that calls the customer's API safely and
 * records the call). The engine passes them on to the model next to its own tools, under the same caps.
 */
export interface CustomerToolSource {
  /** The tenant's enabled tools for the product; calls are audited under the job, or the chat conversation. */
  toolsFor(tenantId: string, product: ToolProduct, context: ToolRunOwner & { signal?: AbortSignal }): Promise<OfferedTools>;
}

/** The customer tools a run offers the model, and the identity of that set. */
export interface OfferedTools {
  tools: ToolDefinition[];
  /**
   * The digest of the tenant's tool set these were loaded from (the database's `customer_tool_set_digest`, read
   * in the same statement as the tools), or null when the tenant has none for the product. A result is cached
   * under a key for exactly this set.
   */
  toolSet: string | null;
}

/** What a run's tool calls are recorded under: a product job, or a chat conversation. */
export type ToolRunOwner = { jobId: string; conversationId?: undefined } | { conversationId: string; jobId?: undefined };

/** No customer tools: the default where none are configured. */
export const noCustomerTools: CustomerToolSource = {
  toolsFor: () => Promise.resolve({ tools: [], toolSet: null }),
};
