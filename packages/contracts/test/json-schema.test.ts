// Every exported schema must convert to JSON Schema, because the OpenAPI document is generated from them:
// request-side schemas are rendered from their input side, responses and events from their output side.
// Nothing exported uses transforms, so both sides must work for every schema.
import { z } from 'zod';
import * as contracts from '../src';

function isSchema(value: unknown): value is z.ZodType {
  return value instanceof z.ZodType;
}

/** [name, schema] for every exported schema, including those inside exported maps (event catalogues etc.). */
const exported: [string, z.ZodType][] = Object.entries(contracts).flatMap(([name, value]): [string, z.ZodType][] => {
  if (isSchema(value)) return [[name, value]];
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return Object.entries(value)
      .filter((entry): entry is [string, z.ZodType] => isSchema(entry[1]))
      .map(([key, schema]) => [`${name}.${key}`, schema]);
  }
  return [];
});
const topLevel = exported.filter(([name]) => !name.includes('.'));

describe('JSON Schema conversion', () => {
  it('finds every schema', () => {
    expect(topLevel.length).toBeGreaterThanOrEqual(57);
    expect(exported.length).toBeGreaterThan(topLevel.length);
  });

  it.each(exported)('%s converts from its input side', (_name, schema) => {
    expect(() => z.toJSONSchema(schema, { io: 'input' })).not.toThrow();
  });

  it.each(exported)('%s converts from its output side', (_name, schema) => {
    expect(() => z.toJSONSchema(schema)).not.toThrow();
  });

  it.each(topLevel)('%s carries its own name as its id, and a description', (name, schema) => {
    const meta = z.globalRegistry.get(schema);
    expect(meta?.id).toBe(name);
    expect(typeof meta?.description).toBe('string');
  });

  it('uses every id once, so all schemas can share one components section', () => {
    const ids = exported.map(([, schema]) => z.globalRegistry.get(schema)?.id).filter((id) => id !== undefined);
    const everything = z.object(Object.fromEntries(exported.map(([name, schema]) => [name, schema])));
    expect(new Set(ids).size).toBe(new Set(exported.map(([, schema]) => schema)).size);
    expect(() => z.toJSONSchema(everything, { io: 'input' })).not.toThrow();
    expect(() => z.toJSONSchema(everything)).not.toThrow();
  });
});

type JsonSchemaObject = Record<string, unknown> & { properties?: Record<string, Record<string, unknown>>; required?: string[] };

/** The root schema with its own $ref (zod emits a $ref to $defs for schemas that carry an id) resolved. */
function rootOf(schema: z.ZodType, io: 'input' | 'output'): { root: JsonSchemaObject; defs: Record<string, JsonSchemaObject> } {
  const json = z.toJSONSchema(schema, { io }) as JsonSchemaObject & { $defs?: Record<string, JsonSchemaObject>; $ref?: string };
  const defs = json.$defs ?? {};
  const root = json.$ref === undefined ? json : defs[json.$ref.replace('#/$defs/', '')];
  if (root === undefined) throw new Error('unresolved root');
  return { root, defs };
}

describe('what the OpenAPI document will say', () => {
  it('NewsRequest: only symbols is required, defaults are shown, unknown fields are refused', () => {
    const { root } = rootOf(contracts.NewsRequest, 'input');
    expect(root.required).toEqual(['symbols']);
    expect(root.additionalProperties).toBe(false);
    expect(root.properties?.n).toMatchObject({ type: 'integer', minimum: 1, maximum: 20, default: 5 });
    expect(root.properties?.language).toMatchObject({ default: 'en' });
    expect(root.properties?.symbols).toMatchObject({ type: 'array', minItems: 1, maxItems: 10 });
  });

  it('StockSymbol: the input side accepts any case, the output side states the pattern', () => {
    const input = rootOf(contracts.StockSymbol, 'input').root;
    const output = rootOf(contracts.StockSymbol, 'output').root;
    expect(input).not.toHaveProperty('pattern');
    expect(output.pattern).toBe(contracts.STOCK_SYMBOL_PATTERN.source);
  });

  it('Language: the output side is the closed list of ISO 639-1 codes', () => {
    const output = rootOf(contracts.Language, 'output').root;
    expect(output.enum).toContain('en');
    expect(output.enum).not.toContain('xx');
  });

  it('JobStatusResponse: error is required when failed and forbidden otherwise; queue_position only when pending; result_url when completed', () => {
    const { root } = rootOf(contracts.JobStatusResponse, 'output');
    const [pending, running, completed, failed] = root.oneOf as JsonSchemaObject[];
    expect(failed?.required).toContain('error');
    for (const branch of [pending, running, completed]) expect(branch?.properties?.error).toEqual({ not: {} });
    expect(pending?.properties?.queue_position).toMatchObject({ type: 'integer', minimum: 0 });
    expect(pending?.required).not.toContain('queue_position');
    for (const branch of [running, completed]) expect(branch?.properties?.queue_position).toEqual({ not: {} });
    expect(failed?.properties?.queue_position).toBeUndefined();
    expect(completed?.required).toContain('result_url');
    for (const branch of [pending, running, failed]) expect(branch?.properties?.result_url).toBeUndefined();
  });

  it('OutputSchema and ToolHeaders state their property counts', () => {
    expect(rootOf(contracts.OutputSchema, 'input').root).toMatchObject({ minProperties: 1, maxProperties: 50 });
    expect(rootOf(contracts.ToolHeaders, 'input').root).toMatchObject({ maxProperties: 20 });
  });
});
