import { z } from 'zod';

export interface ToolContext {
  signal: AbortSignal;
}

/** What a tool hands back to the model, plus the URLs it returned (the only URLs a result may cite). */
export interface ToolOutput {
  content: unknown;
  urls?: readonly string[];
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

/** The JSON Schema the API receives for a tool's input. */
export function toolInputSchema(tool: ToolDefinition): Record<string, unknown> {
  const schema = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete schema.$schema;
  return schema;
}
