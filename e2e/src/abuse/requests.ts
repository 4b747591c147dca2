// Request generators for the fuzz suite, driven by the route table: API_ROUTE_LIST gives each route's method, path and
// scope, and the OpenAPI document generated from the same table gives the schemas of its path, query and header
// parameters and of its body. A route added to the table is therefore fuzzed without touching this file.
//
// Each request starts from a near-valid shape derived from the schemas (examples, enums, bounds) and is then
// broken in one or more places: a value replaced by junk of another type, size or alphabet, a required field
// removed, an unknown one added, the JSON text itself broken, the content type or encoding wrong, the API key of
// the wrong kind, the path parameters malformed or traversing, the query full of junk, the headers odd or huge.
import { gzipSync } from 'node:zlib';
import { createOpenApiDocument, type ApiRoute } from '@fin/contracts';
import fc from 'fast-check';
import { MAX_BODY_BYTES, MAX_HEAD_BYTES, headBytes, type WireRequest } from './http';

// ---- The OpenAPI document, as far as the generators read it ----

/** The subset of JSON Schema the document uses. */
interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  examples?: unknown[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
}

interface Parameter {
  in: 'path' | 'query' | 'header';
  name: string;
  schema: JsonSchema;
}

interface Operation {
  parameters?: (Parameter | { $ref: string })[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}

interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema>; parameters?: Record<string, Parameter> };
}

/** What a generated request may use that only exists at run time: keys and the ids of real resources. */
export interface FuzzContext {
  /** API keys by kind; `missing` sends no header. The label is what a failure message shows, never the key. */
  keys: readonly { label: string; value: string | undefined; weight: number }[];
  /** Ids of real resources by path or query parameter name (job_id, id, conversation_id), of both tenants. */
  ids: Readonly<Record<string, readonly string[]>>;
}

/** One generated request: what goes on the wire, plus what a failure message shows. */
export interface FuzzRequest {
  routeId: string;
  /** True when method and path are the route's own (no method swap, no path mutation). */
  onRoute: boolean;
  /** Request line and headers over Node's limit, or a body over the gateway's: the server may close the connection. */
  oversized: boolean;
  wire: WireRequest;
}

export interface RouteFuzzer {
  route: ApiRoute;
  arbitrary: fc.Arbitrary<FuzzRequest>;
}

let documentCache: OpenApiDocument | undefined;
function openApiDocument(): OpenApiDocument {
  documentCache ??= createOpenApiDocument() as unknown as OpenApiDocument;
  return documentCache;
}

function resolve(schema: JsonSchema | undefined, document: OpenApiDocument): JsonSchema {
  let current = schema ?? {};
  for (let hops = 0; current.$ref !== undefined && hops < 10; hops++) {
    const name = current.$ref.split('/').pop() ?? '';
    const { $ref: _ref, ...rest } = current;
    current = { ...(document.components.schemas[name] ?? {}), ...rest };
  }
  return current;
}

function parametersOf(operation: Operation, document: OpenApiDocument): Parameter[] {
  return (operation.parameters ?? []).map((parameter) => {
    if ('$ref' in parameter) return document.components.parameters?.[parameter.$ref.split('/').pop() ?? ''] as Parameter;
    return parameter;
  });
}

// ---- Values ----

/** Strings that have broken parsers, validators, databases and logs before. */
const NASTY_STRINGS = [
  '',
  ' ',
  '\u0000',
  'AAPL\u0000',
  '\ud800',
  'a\udfffb',
  '\u202eLPAA',
  '\u200b',
  '\ufeff',
  '\r\n',
  '\u2028\u2029',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  '👩‍👩‍👧‍👦',
  'Ａ\u0301\u0301\u0301',
  "' OR 1=1 --",
  '"; DROP TABLE jobs; --',
  '<script>alert(1)</script>',
  '${7*7}{{7*7}}',
  '../../../../etc/passwd',
  '%00%2e%2e%2f',
  '__proto__',
  'constructor',
  'null',
  'undefined',
  'NaN',
  '-0',
  '1e400',
  '0x7f000001',
  '\\u0000',
];

const NASTY_NUMBERS = [0, -0, -1, 1.5, 0.1, 1e308, -1e308, 5e-324, 2 ** 31, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER];

/** Strings of every alphabet: unicode, binary (lone surrogates), control characters, and long ones. */
const junkString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...NASTY_STRINGS), weight: 4 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 30 }), weight: 2 },
  {
    arbitrary: fc.string({
      unit: fc.constantFrom(...'\u0000\u0001\u0007\b\t\n\u000b\f\r\u001b\u007f\u0085\u00a0'.split('')),
      maxLength: 10,
    }),
    weight: 1,
  },
  // Long: past every field's length limit (message 4,000, prompt 8,000 characters).
  {
    arbitrary: fc.tuple(fc.constantFrom(4_001, 8_001), fc.constantFrom('a', 'é', '😀', ' ')).map(([length, char]) => char.repeat(length)),
    weight: 1,
  },
);

/** Past the gateway's 256 KiB body limit, or just under it (then the services' own limits apply). */
const hugeString: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom(70_000, 250_000, 300_000), fc.constantFrom('a', 'é', '😀'))
  .map(([length, char]) => char.repeat(length));

/** Nested arrays `depth` deep (JSON.stringify handles a few thousand; deeper ones are written as text). */
function nested(depth: number): unknown {
  let value: unknown = [];
  for (let level = 1; level < depth; level++) value = [value];
  return value;
}

/** A JSON value of any type, meant to be the wrong one wherever it lands. */
const junkValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.constantFrom<unknown>(null, true, false, [], {}, [[]], [null], { '': null }), weight: 3 },
  { arbitrary: fc.constantFrom(...NASTY_NUMBERS), weight: 2 },
  { arbitrary: fc.integer(), weight: 1 },
  { arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }), weight: 1 },
  { arbitrary: junkString, weight: 5 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 2 },
  { arbitrary: fc.constantFrom(65, 100, 1_000).map(nested), weight: 1 },
  { arbitrary: fc.array(junkString, { maxLength: 12 }), weight: 1 },
);

/**
 * A value that satisfies `schema` as far as its examples, enums, types and bounds go (patterns and refinements are
 * not reproduced, so some are invalid anyway). Sizes stay small: the mutations below are what make values large.
 */
function valueFor(schema: JsonSchema | undefined, document: OpenApiDocument, depth = 0): fc.Arbitrary<unknown> {
  const resolved = resolve(schema, document);
  const generated = generatedFor(resolved, document, depth);
  const examples = resolved.examples ?? [];
  if (examples.length === 0) return generated;
  return fc.oneof({ arbitrary: fc.constantFrom(...examples), weight: 3 }, { arbitrary: generated, weight: 1 });
}

function generatedFor(schema: JsonSchema, document: OpenApiDocument, depth: number): fc.Arbitrary<unknown> {
  if (depth > 6) return fc.constant(null);
  if (schema.const !== undefined) return fc.constant(schema.const);
  // A few values of a long enum (e.g. 184 languages) are enough, and keep the number of distinct valid requests,
  // hence of jobs started, small.
  if (schema.enum !== undefined && schema.enum.length > 0) return fc.constantFrom(...schema.enum.slice(0, 4));
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives !== undefined && alternatives.length > 0)
    return fc.oneof(...alternatives.map((alternative) => valueFor(alternative, document, depth + 1)));
  if (schema.allOf !== undefined && schema.allOf.length > 0) return valueFor(schema.allOf[0], document, depth + 1);
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  if (types.length > 1) return fc.oneof(...types.map((type) => generatedFor({ ...schema, type }, document, depth)));
  switch (types[0]) {
    case 'object': {
      const properties = schema.properties ?? {};
      const names = Object.keys(properties);
      if (names.length > 0) {
        const model: Record<string, fc.Arbitrary<unknown>> = {};
        for (const name of names) model[name] = valueFor(properties[name], document, depth + 1);
        return fc.record(model, { requiredKeys: (schema.required ?? []).filter((name) => names.includes(name)) });
      }
      const values =
        typeof schema.additionalProperties === 'object'
          ? valueFor(schema.additionalProperties, document, depth + 1)
          : fc.jsonValue({ maxDepth: 2 });
      return fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), values, { maxKeys: 4 });
    }
    case 'array':
      return fc.array(valueFor(schema.items, document, depth + 1), {
        minLength: Math.min(schema.minItems ?? 0, 4),
        maxLength: Math.min(schema.maxItems ?? 4, 4),
      });
    case 'string':
      if (schema.format === 'uuid') return fc.uuid();
      if (schema.format === 'uri') return fc.constantFrom('https://api.example.com/positions', 'https://example.org/x?y=1');
      return fc.string({
        minLength: schema.minLength ?? 0,
        maxLength: Math.max(schema.minLength ?? 0, Math.min(schema.maxLength ?? 16, 16)),
      });
    case 'integer':
      return fc.integer({ min: Math.max(schema.minimum ?? -1000, -(2 ** 31)), max: Math.min(schema.maximum ?? 1000, 2 ** 31) });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

// ---- Mutations of a JSON value ----

type Mutation =
  | { kind: 'replace'; at: number; value: unknown }
  | { kind: 'delete'; at: number }
  | { kind: 'add'; at: number; name: string; value: unknown }
  | { kind: 'stringify'; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: junkValue }), weight: 6 },
  { arbitrary: fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }), weight: 2 },
  {
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      at: fc.nat(),
      name: fc.oneof(
        fc.constantFrom('__proto__', 'constructor', 'prototype', 'langauge', 'symbol', 'tenant_id', 'job_id', ''),
        fc.string({ maxLength: 12 }),
      ),
      value: junkValue,
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ kind: fc.constant('stringify' as const), at: fc.nat() }), weight: 1 },
);

interface Node {
  parent: Record<string, unknown> | unknown[] | undefined;
  key: string | number | undefined;
  value: unknown;
}

function nodesOf(root: unknown): Node[] {
  const nodes: Node[] = [{ parent: undefined, key: undefined, value: root }];
  for (let index = 0; index < nodes.length && nodes.length < 200; index++) {
    const { value } = nodes[index] as Node;
    if (Array.isArray(value)) value.forEach((item, key) => nodes.push({ parent: value, key, value: item }));
    else if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value)) nodes.push({ parent: value as Record<string, unknown>, key, value: item });
    }
  }
  return nodes;
}

/** Applies the mutations to a copy of `base`; returns the new root. */
function mutate(base: unknown, mutations: readonly Mutation[]): unknown {
  const holder = { root: structuredClone<unknown>(base) };
  for (const change of mutations) {
    const nodes = nodesOf(holder.root);
    const node = nodes[change.at % nodes.length] as Node;
    const set = (value: unknown) => {
      if (node.parent === undefined) holder.root = value;
      else if (Array.isArray(node.parent)) node.parent[node.key as number] = value;
      else Object.defineProperty(node.parent, node.key as string, { value, enumerable: true, writable: true, configurable: true });
    };
    switch (change.kind) {
      case 'replace':
        // A copy: generated values may be shared constants, which a later mutation must not change.
        set(structuredClone(change.value));
        break;
      case 'delete':
        if (Array.isArray(node.parent)) node.parent.splice(node.key as number, 1);
        else if (node.parent !== undefined) Reflect.deleteProperty(node.parent, node.key as string);
        else holder.root = undefined;
        break;
      case 'add':
        if (typeof node.value === 'object' && node.value !== null && !Array.isArray(node.value)) {
          // defineProperty, so that "__proto__" becomes a real key of the JSON text rather than the prototype.
          Object.defineProperty(node.value, change.name, {
            value: structuredClone(change.value),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        } else if (Array.isArray(node.value)) node.value.push(structuredClone(change.value));
        else set({ [change.name]: structuredClone(change.value), value: node.value });
        break;
      case 'stringify':
        set(JSON.stringify(node.value) ?? 'undefined');
        break;
    }
  }
  return holder.root;
}

// ---- Bodies ----

/** A body as text or bytes, with the story of how it was made (for failure messages). */
interface Body {
  text: string | Buffer;
  how: string;
}

function bodyArbitrary(schema: JsonSchema | undefined, document: OpenApiDocument): fc.Arbitrary<Body | undefined> {
  const resolved = resolve(schema, document);
  const base = valueFor(resolved, document);
  const fieldNames = Object.keys(resolved.properties ?? {});
  const field = fieldNames.length > 0 ? fc.constantFrom(...fieldNames) : fc.constant('data');
  const json = (value: unknown, how: string): Body => ({ text: JSON.stringify(value) ?? '', how });
  return fc.oneof(
    // Near-valid, then broken in 1 to 3 places (most of the volume: it reaches the services' validation).
    {
      arbitrary: fc
        .tuple(base, fc.array(mutation, { minLength: 1, maxLength: 3 }))
        .map(([value, changes]) => json(mutate(value, changes), `mutated (${changes.map((change) => change.kind).join(', ')})`)),
      weight: 120,
    },
    // As the schema allows (mostly valid: these start jobs, conversations and tools).
    { arbitrary: base.map((value) => json(value, 'near-valid')), weight: 10 },
    // A field far too long: around and past the body size limits.
    {
      arbitrary: fc
        .tuple(base, fc.nat(), hugeString)
        .map(([value, at, huge]) => json(mutate(value, [{ kind: 'replace', at, value: huge }]), `a ${huge.length}-character value`)),
      weight: 3,
    },
    // Any JSON at all.
    { arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value) => json(value, 'arbitrary JSON')), weight: 20 },
    // JSON the parser accepts that is hostile: very deep, duplicate keys, prototype keys, huge numbers.
    {
      arbitrary: fc.tuple(field, fc.constantFrom(1_000, 10_000, 100_000)).chain(([name, depth]) =>
        fc.constantFrom<Body>(
          { text: `{"${name}":${'['.repeat(depth)}${']'.repeat(depth)}}`, how: `${name} nested ${depth} deep` },
          {
            text: `{"${name}":${'{"a":'.repeat(Math.min(depth, 20_000))}1${'}'.repeat(Math.min(depth, 20_000))}}`,
            how: `objects nested ${Math.min(depth, 20_000)} deep`,
          },
          { text: `{"${name}":1,"${name}":"two","${name}":[3]}`, how: 'duplicate keys' },
          { text: `{"__proto__":{"admin":true},"constructor":{"prototype":{"admin":true}},"${name}":null}`, how: 'prototype keys' },
          { text: `{"${name}":1${'0'.repeat(400)}}`, how: 'a 401-digit number' },
          { text: `{"${name}":1e400,"n":-0,"x":1E-400}`, how: 'out-of-range numbers' },
          { text: `{"${name}":"${'\\ud83d'.repeat(50)}"}`, how: 'lone surrogate escapes' },
          { text: `{"${name}":"\\u0000\\u0000"}`, how: 'NUL escapes' },
        ),
      ),
      weight: 20,
    },
    // Not JSON.
    {
      arbitrary: fc.tuple(base, fc.nat(), fc.string({ unit: 'binary', maxLength: 8 })).chain(([value, cut, tail]) => {
        const text = JSON.stringify(value) ?? '{}';
        return fc.constantFrom<Body>(
          { text: text.slice(0, cut % Math.max(1, text.length)), how: 'truncated JSON' },
          { text: `${text}${tail}`, how: 'JSON followed by junk' },
          { text: text.replace(/"/g, "'"), how: 'single quotes' },
          { text: `\ufeff${text}`, how: 'byte order mark' },
          { text: `{"a":NaN,"b":Infinity,}`, how: 'NaN and a trailing comma' },
          { text: `// comment\n${text}`, how: 'comment' },
          { text: `{symbols:["AAPL"]}`, how: 'unquoted key' },
          { text: Buffer.from([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]), how: 'UTF-16 bytes' },
          {
            text: Buffer.concat([Buffer.from('{"prompt":"'), Buffer.from([0xc3, 0x28, 0xa0, 0xa1, 0xed, 0xa0, 0x80]), Buffer.from('"}')]),
            how: 'invalid UTF-8 in a string',
          },
          { text: 'symbols=AAPL&n=5', how: 'form-encoded' },
          { text: tail, how: 'random bytes' },
        );
      }),
      weight: 20,
    },
    { arbitrary: fc.constant(undefined), weight: 10 },
  );
}

// ---- Headers ----

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=UTF-8',
  'APPLICATION/JSON',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/json; charset="nonsense"',
  'application/vnd.api+json',
  'application/merge-patch+json',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  '*/*',
  'application/',
  'json',
  ';;;',
  '',
];

const ENCODINGS = ['gzip', 'deflate', 'br', 'identity', 'x-gzip', 'compress', 'gzip, gzip', 'zstd', 'nonsense'];

const tokenName = fc.string({
  unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!#$%&'*+^`|~".split('')),
  minLength: 1,
  maxLength: 24,
});
/** Header values node:http will send: visible latin1, space and tab. */
const headerValue = fc.oneof(
  fc.string({
    unit: fc.mapToConstant(
      { num: 0x7f - 0x20, build: (v) => String.fromCharCode(0x20 + v) },
      { num: 0x100 - 0xa0, build: (v) => String.fromCharCode(0xa0 + v) },
    ),
    maxLength: 64,
  }),
  fc.constantFrom('', ' ', '\t', 'null', '0', '-1', 'a'.repeat(4_000), '../..', 'fin_', 'Bearer x', '\u00ff\u00fe'),
);
/** Header lines only a raw socket sends: control characters, bare CR, NUL, obs-fold, non-token names, huge blocks. */
const rawHeaderLines: fc.Arbitrary<[string, string][]> = fc.oneof(
  fc.constantFrom<[string, string][]>(
    [['X-Junk', 'a\u0000b']],
    [['X-Junk', 'a\u0001\u0007\u001b']],
    [['X-Junk', 'a\rb']],
    [['X-API-Key', 'fin_\u0000']],
    [['X Bad Name', '1']],
    [['X-(Bad)', '1']],
    [['', 'empty name']],
    [['X-Folded', 'a\r\n  continued']],
    [
      ['Content-Length', '5'],
      ['Content-Length', '6'],
    ],
    [['Content-Length', '-1']],
    [['Content-Length', 'abc']],
    [
      ['Transfer-Encoding', 'chunked'],
      ['Content-Length', '3'],
    ],
    [['Transfer-Encoding', 'gzip, chunked']],
    [['Transfer-Encoding', 'identity']],
    [['X-Latin1', 'caf\u00e9 \u00ff']],
    [['X-Huge', 'a'.repeat(20_000)]],
    [['X-Huge', 'a'.repeat(70_000)]],
  ),
  fc
    .integer({ min: 100, max: 400 })
    .map((count) => Array.from({ length: count }, (_, index): [string, string] => [`X-Many-${index}`, String(index)])),
);

// ---- Paths and queries ----

/** Percent-encodes `value` as UTF-8 (lone surrogates become U+FFFD, as any HTTP client would send them). */
function percentEncode(value: string): string {
  return encodeURIComponent(value.toWellFormed());
}

/** Path segments that are not what they claim: traversal, encodings that decode to separators, junk. */
const hostileSegments = fc.constantFrom(
  '..',
  '.',
  '%2e%2e',
  '%2E%2E%2F%2E%2E',
  '..%2f..%2fportal',
  '..%5c..%5c',
  '%2f',
  '%00',
  '%ff',
  '%zz',
  '%',
  '%u002e',
  ';jsessionid=1',
  'a;b=c',
  '%20',
  '%09',
  '%0d%0aX-Injected:%201',
  '~',
  '*',
  '{job_id}',
  ':id',
  percentEncode('𝔘𝔫𝔦'),
  'x'.repeat(5_000),
  '\u00e9',
  '\u00ff',
);

function segmentFor(parameter: Parameter, context: FuzzContext, document: OpenApiDocument): fc.Arbitrary<string> {
  const known = context.ids[parameter.name] ?? [];
  const options: fc.WeightedArbitrary<string>[] = [
    { arbitrary: valueFor(parameter.schema, document).map((value) => percentEncode(String(value))), weight: 4 },
    { arbitrary: fc.uuid().map((value) => value.toUpperCase()), weight: 1 },
    { arbitrary: junkString.map((value) => percentEncode(value)), weight: 3 },
    { arbitrary: hostileSegments, weight: 3 },
    { arbitrary: fc.uuid().map((value) => `${value}%00`), weight: 1 },
  ];
  if (known.length > 0) options.push({ arbitrary: fc.constantFrom(...known), weight: 4 });
  return fc.oneof(...options);
}

function queryArbitrary(parameters: Parameter[], context: FuzzContext, document: OpenApiDocument): fc.Arbitrary<string> {
  const declared = parameters.filter((parameter) => parameter.in === 'query');
  const pair = (name: fc.Arbitrary<string>, value: fc.Arbitrary<unknown>) =>
    fc.tuple(name, value, fc.boolean()).map(([key, item, encode]) => {
      const text = typeof item === 'string' ? item : (JSON.stringify(item) ?? '');
      return encode
        ? `${percentEncode(key)}=${percentEncode(text)}`
        : `${key.replace(/[^\x21-\x7e]/g, '')}=${text.replace(/[^\x21-\x7e]/g, '')}`;
    });
  const pairs: fc.Arbitrary<string>[] = [
    pair(
      fc.oneof(tokenName, fc.constantFrom('a[b]', 'a[]', '__proto__[x]', 'constructor[prototype][x]', '', '%', '%zz')),
      fc.oneof(junkValue, headerValue),
    ),
  ];
  for (const parameter of declared) {
    const known = context.ids[parameter.name] ?? [];
    const value =
      known.length > 0
        ? fc.oneof(valueFor(parameter.schema, document), junkValue, fc.constantFrom(...known))
        : fc.oneof(valueFor(parameter.schema, document), junkValue);
    pairs.push(pair(fc.constant(parameter.name), value), pair(fc.constant(parameter.name), value));
  }
  return fc.oneof(
    { arbitrary: fc.constant(''), weight: 2 },
    { arbitrary: fc.array(fc.oneof(...pairs), { minLength: 1, maxLength: 6 }).map((items) => `?${items.join('&')}`), weight: 6 },
    {
      arbitrary: fc.constantFrom(
        '?',
        '??',
        '?&&&',
        '?=',
        '?%',
        '?a=%zz',
        `?${'a=1&'.repeat(2_000)}`,
        `?x=${'y'.repeat(12_000)}`,
        '?a#fragment',
      ),
      weight: 1,
    },
  );
}

// ---- Requests ----

/** How a request's headers look to a reader: API keys by their kind, never their value; long values cut. */
function describeHeader(name: string, value: string, labels: ReadonlyMap<string, string>): string {
  const label = labels.get(value);
  if (label !== undefined) return `${name}: <${label}>`;
  const shown = value.length > 120 ? `${JSON.stringify(value.slice(0, 120))}… (${value.length} chars)` : JSON.stringify(value);
  return `${name}: ${shown}`;
}

function describeRequest(request: FuzzRequest, labels: ReadonlyMap<string, string>, how = ''): string {
  const { wire } = request;
  const target = wire.target.length > 300 ? `${wire.target.slice(0, 300)}… (${wire.target.length} chars)` : wire.target;
  const lines = [`${wire.method} ${target}${wire.raw ? ' (raw socket)' : ''}${wire.chunked ? ' (chunked)' : ''}`];
  for (const [name, value] of wire.headers) lines.push(`  ${describeHeader(name, value, labels)}`);
  if (wire.body !== undefined) {
    const text = wire.body.toString('latin1');
    lines.push(
      `  body${how === '' ? '' : ` [${how}]`} (${wire.body.length} bytes): ${text.length > 400 ? `${JSON.stringify(text.slice(0, 400))}…` : JSON.stringify(text)}`,
    );
  }
  return lines.join('\n');
}

const OTHER_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

/** The generator of one route's requests. */
export function routeFuzzer(route: ApiRoute, context: FuzzContext): RouteFuzzer {
  const document = openApiDocument();
  const operation = document.paths[route.path]?.[route.method] ?? {};
  const parameters = parametersOf(operation, document);
  const bodySchema = operation.requestBody?.content?.['application/json']?.schema;
  const labels = new Map(context.keys.flatMap((key) => (key.value === undefined ? [] : [[key.value, key.label] as const])));

  // Path: each {param} filled; sometimes the path itself is bent (trailing slash, case, extra segment, traversal).
  const pathParameters = parameters.filter((parameter) => parameter.in === 'path');
  const segments = fc.tuple(...pathParameters.map((parameter) => segmentFor(parameter, context, document)));
  const path = fc
    .tuple(
      segments,
      fc.oneof(
        { arbitrary: fc.constant((p: string) => p), weight: 20 },
        {
          arbitrary: fc.constantFrom(
            (p: string) => `${p}/`,
            (p: string) => p.replace(/\/$/, ''),
            (p: string) => `${p}//`,
            (p: string) => p.replace(/[a-z]/g, (letter) => letter.toUpperCase()),
            (p: string) => `/${p}`,
            (p: string) => `${p}/..`,
            (p: string) => `${p}/%2e%2e/%2e%2e/portal/tools`,
            (p: string) => `${p}/../../portal/login`,
            (p: string) => p.replace('/api/', '/api/./'),
            (p: string) => `${p}/extra`,
          ),
          weight: 2,
        },
      ),
    )
    .map(([values, bend]) => {
      let filled = route.path;
      pathParameters.forEach((parameter, index) => {
        filled = filled.replace(`{${parameter.name}}`, values[index] as string);
      });
      // Off the route when bent, or when a segment is empty (then another route may match the path).
      return { path: bend(filled), bent: bend(route.path) !== route.path || values.some((value) => value === '') };
    });

  const keyChoice = fc.oneof(...context.keys.map((key) => ({ arbitrary: fc.constant(key.value), weight: key.weight })));
  const junkKey = fc.oneof(
    junkString.map((value) => value.replace(/[^\x20-\x7e\x80-\xff\t]/g, '').slice(0, 8_001)),
    fc.constantFrom(
      'fin_',
      'fin_' + 'A'.repeat(42),
      'FIN_' + 'a'.repeat(42),
      'Bearer fin_x',
      'fin_u8VPBbuxSgEKfWLsxO3zxWPsqcLEN4DNmK6C3Pw0XQ',
    ),
  );
  const headerParameters = parameters.filter((parameter) => parameter.in === 'header' && parameter.name !== 'X-Request-Id');

  /** `arbitrary` in `percent` % of the requests, undefined otherwise. */
  const sometimes = <T>(arbitrary: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | undefined> =>
    fc.oneof({ arbitrary: fc.constant(undefined), weight: 100 - percent }, { arbitrary, weight: percent });
  const headers = fc.record({
    key: fc.oneof({ arbitrary: keyChoice, weight: 9 }, { arbitrary: junkKey, weight: 1 }),
    secondKey: sometimes(keyChoice, 3),
    contentType: sometimes(fc.constantFrom(...CONTENT_TYPES), 15),
    contentTypeWhenBody: fc.oneof(
      { arbitrary: fc.constant('application/json'), weight: 8 },
      { arbitrary: fc.constantFrom(...CONTENT_TYPES, undefined), weight: 2 },
    ),
    encoding: sometimes(fc.tuple(fc.constantFrom(...ENCODINGS), fc.boolean()), 6),
    accept: sometimes(fc.constantFrom('text/event-stream', '*/*', 'application/xml', 'text/html', 'application/json;q=0', ''), 20),
    requestId: sometimes(fc.oneof(fc.uuid(), headerValue, fc.constant('a'.repeat(129))), 20),
    declared: fc.array(
      fc.tuple(
        fc.constantFrom(
          ...(headerParameters.length > 0 ? headerParameters : [{ name: 'X-Nothing', in: 'header', schema: {} } as Parameter]),
        ),
        fc.oneof(fc.constant<unknown>(undefined), junkValue),
      ),
      { maxLength: 2 },
    ),
    spoofed: sometimes(
      fc.constantFrom<[string, string]>(
        ['x-fin-tenant-id', '00000000-0000-4000-8000-000000000000'],
        ['x-fin-signature', 'deadbeef'],
        ['x-fin-scopes', 'news,stock-report,analysis,chat,tools'],
        ['X-Forwarded-For', '127.0.0.1'],
        ['X-Forwarded-Host', 'evil.example'],
        ['Host', 'evil.example'],
        ['Cookie', 'fin_portal_session=forged'],
        ['Authorization', 'Bearer forged'],
        ['Connection', 'close'],
        ['Expect', '100-continue'],
        ['Connection', 'x-api-key'],
        ['Range', 'bytes=0-1'],
        ['Upgrade', 'websocket'],
      ),
      10,
    ),
    extra: fc.oneof(
      { arbitrary: fc.constant([]), weight: 4 },
      { arbitrary: fc.array(fc.tuple(tokenName, headerValue), { minLength: 1, maxLength: 3 }), weight: 1 },
    ),
  });

  const method = fc.oneof(
    { arbitrary: fc.constant(route.method.toUpperCase()), weight: 30 },
    { arbitrary: fc.constantFrom(...OTHER_METHODS), weight: 1 },
  );
  // Bodies go to every route: a GET with a body, or a POST without one, is bad input too.
  const body =
    bodySchema !== undefined
      ? bodyArbitrary(bodySchema, document)
      : fc.oneof({ arbitrary: fc.constant(undefined), weight: 8 }, { arbitrary: bodyArbitrary({ type: 'object' }, document), weight: 1 });
  const transport = fc.oneof(
    { arbitrary: fc.constant({ raw: false, chunked: false, lines: [] as readonly [string, string][] }), weight: 16 },
    { arbitrary: fc.constant({ raw: false, chunked: true, lines: [] as readonly [string, string][] }), weight: 2 },
    { arbitrary: rawHeaderLines.map((lines) => ({ raw: true, chunked: false, lines: lines })), weight: 1 },
  );

  const arbitrary = fc
    .record({ method, path, query: queryArbitrary(parameters, context, document), headers, body, transport })
    .map(({ method: verb, path: { path: target, bent }, query, headers: h, body: made, transport: t }): FuzzRequest => {
      const lines: [string, string][] = [];
      if (h.key !== undefined) lines.push(['X-API-Key', h.key]);
      if (h.secondKey !== undefined) lines.push(['X-API-Key', h.secondKey]);
      const contentType = made === undefined ? h.contentType : h.contentTypeWhenBody;
      if (contentType !== undefined) lines.push(['Content-Type', contentType]);
      let bytes = made === undefined ? undefined : Buffer.isBuffer(made.text) ? made.text : Buffer.from(made.text, 'utf8');
      if (h.encoding !== undefined) {
        const [encoding, compress] = h.encoding;
        lines.push(['Content-Encoding', encoding]);
        // Really gzipped (valid or not for the declared encoding), or declared and not.
        if (compress && bytes !== undefined) bytes = gzipSync(bytes);
      }
      if (h.accept !== undefined) lines.push(['Accept', h.accept]);
      if (h.requestId !== undefined) lines.push(['X-Request-Id', h.requestId]);
      for (const [parameter, value] of h.declared) {
        if (parameter.name === 'X-Nothing') continue;
        const text = value === undefined ? undefined : typeof value === 'string' ? value : JSON.stringify(value);
        lines.push([
          parameter.name,
          (text ?? String((parameter.schema.examples ?? ['x'])[0])).replace(/[^\t\x20-\x7e\x80-\xff]/g, '?').slice(0, 8_001),
        ]);
      }
      if (h.spoofed !== undefined) lines.push(h.spoofed);
      for (const [name, value] of h.extra) lines.push([name, value]);
      // Node's client mishandles a chunked body on GET and DELETE (it drops the connection after the answer, and the
      // next request on it fails): those go over a raw socket, framed by hand.
      const rawChunked = t.chunked && bytes !== undefined && !['POST', 'PUT', 'PATCH'].includes(verb);
      const rawLines: readonly [string, string][] = rawChunked ? [...t.lines, ['Transfer-Encoding', 'chunked']] : t.lines;
      if (t.raw || rawChunked) {
        for (const line of rawLines) lines.push(line);
        // The body is framed as the lines declare it, completely: a request must never leave the server waiting
        // for bytes that will not come (that would measure its timeouts, not its input handling).
        const encoding = rawLines.find(([name]) => /^transfer-encoding$/i.test(name))?.[1];
        if (encoding !== undefined && /chunked\s*$/i.test(encoding)) {
          const payload = bytes ?? Buffer.alloc(0);
          bytes = Buffer.concat([
            Buffer.from(payload.length > 0 ? `${payload.length.toString(16)}\r\n` : ''),
            payload,
            Buffer.from(payload.length > 0 ? '\r\n0\r\n\r\n' : '0\r\n\r\n'),
          ]);
        } else if (bytes !== undefined && !rawLines.some(([name]) => /^(content-length|transfer-encoding)$/i.test(name))) {
          lines.push(['Content-Length', String(bytes.length)]);
        }
      }
      const wire: WireRequest = {
        method: verb,
        target: `${target}${query}`,
        headers: lines,
        ...(bytes === undefined ? {} : { body: bytes }),
        raw: t.raw || rawChunked,
        chunked: t.chunked && !rawChunked,
      };
      // A head over Node's limit, or a body over the gateway's, goes over a raw socket: the server may refuse it by
      // closing the connection before reading it all, which only the raw transport reports as such.
      const oversized = headBytes(wire) >= MAX_HEAD_BYTES || (bytes?.length ?? 0) > MAX_BODY_BYTES;
      if (oversized && !wire.raw) {
        wire.raw = true;
        wire.chunked = false;
        if (bytes !== undefined) lines.push(['Content-Length', String(bytes.length)]);
      }
      const request: FuzzRequest = { routeId: route.id, onRoute: verb === route.method.toUpperCase() && !bent, oversized, wire };
      const how = made?.how ?? '';
      return Object.defineProperty(request, fc.toStringMethod, {
        value: () => `\n${describeRequest(request, labels, how)}\n`,
        enumerable: false,
      });
    });
  return { route, arbitrary };
}
