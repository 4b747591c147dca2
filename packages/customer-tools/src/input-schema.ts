// A tool's `input_schema` is a real JSON Schema (draft 2020-12, what function-calling APIs take): checked against
// the meta-schema and compiled with Ajv when the tool is registered, so a schema the model could never satisfy
// (or that would fail later at call time) is a 400 naming the field at once. The same compiled schema
// validates the arguments the model sends before any request leaves.
//
// `pattern` and `patternProperties` are regular expressions written by a customer and run on text the model
// writes. JavaScript's engine backtracks (`^(a+)+$` on 30 characters holds the event loop for minutes), so Ajv
// runs them on RE2 (re2js, pure JavaScript, linear time in the input whatever the pattern). Patterns are written
// in the JSON Schema (ECMA-262) syntax and translated; what RE2 cannot run in linear time (backreferences,
// lookahead, lookbehind) is refused at registration, naming the keyword's path.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import type { RegExpEngine, RegExpLike } from 'ajv/dist/types';
import { RE2JS } from 're2js';

const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/** What RE2 leaves out, spelled as in ECMA-262 `u` mode: named or numbered backreferences, lookaround. */
const UNSUPPORTED: readonly [RegExp, string][] = [
  [/^\\(?:[1-9]|k<)/, 'backreferences (\\1, \\k<name>) are not supported'],
  [/^\(\?<?[=!]/, 'lookahead and lookbehind ((?=, (?!, (?<=, (?<!) are not supported'],
];

/**
 * Why `pattern` cannot be used, or null when it can: it must be a valid ECMA-262 pattern (as JSON Schema says)
 * that RE2 runs. The pattern is only compiled here, never matched, so a hostile one costs nothing.
 */
function regexProblem(pattern: string): string | null {
  try {
    new RegExp(pattern, 'u');
  } catch (error) {
    return `is not a valid regular expression (${error instanceof SyntaxError ? error.message.replace(/^Invalid regular expression: /, '') : 'cannot be parsed'})`;
  }
  // Outside character classes, an escape or a group opener decides; inside one, `\1` and `(?=` are literals.
  let inClass = false;
  for (let index = 0; index < pattern.length; index++) {
    const rest = pattern.slice(index);
    if (rest.startsWith('\\')) {
      if (!inClass) for (const [unsupported, reason] of UNSUPPORTED) if (unsupported.test(rest)) return reason;
      index++;
    } else if (inClass) {
      if (rest.startsWith(']')) inClass = false;
    } else if (rest.startsWith('[')) {
      inClass = true;
    } else {
      for (const [unsupported, reason] of UNSUPPORTED) if (unsupported.test(rest)) return reason;
    }
  }
  try {
    RE2JS.compile(RE2JS.translateRegExp(pattern));
    return null;
  } catch (error) {
    return `cannot run in linear time (${error instanceof Error ? error.message.slice(0, 120) : 'RE2 refused it'})`;
  }
}

/** Ajv's regular-expression engine: RE2. Ajv keys compiled patterns by `toString()`, so it names the pattern. */
const re2: RegExpEngine = Object.assign(
  (pattern: string): RegExpLike => {
    const compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
    const like: RegExpLike & { toString(): string } = { test: (text: string) => compiled.test(text), toString: () => `re2:${pattern}` };
    return like;
  },
  { code: 'require("re2js").RE2JS' },
);

/**
 * One instance for the process. `addUsedSchema: false` keeps schemas with an `$id` out of its registry (two
 * tenants may use the same `$id`), and each compiled schema is removed from its cache after compilation, so a
 * long-running worker does not accumulate every schema it ever saw. No `loadSchema`: a remote `$ref` is never
 * fetched (that would be a request to an address of the customer's choosing), it fails to compile.
 */
const ajv = new Ajv2020({
  allErrors: true,
  strict: false,
  validateFormats: false,
  addUsedSchema: false,
  logger: false,
  code: { regExp: re2 },
});

/** `/properties/age/type` → `properties.age.type`, as the other validation messages write paths. */
function dotted(pointer: string): string {
  return dottedSegments(
    pointer
      .split('/')
      .slice(1)
      .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~')),
  );
}

function dottedSegments(segments: readonly string[]): string {
  return segments
    .map((segment) =>
      /^[A-Za-z_$][\w$]*$/.test(segment) ? `.${segment}` : /^\d+$/.test(segment) ? `[${segment}]` : `[${JSON.stringify(segment)}]`,
    )
    .join('');
}

// Where a schema holds subschemas (draft 2020-12 and the older spellings Ajv still reads). `const`, `enum`,
// `default` and `examples` hold data, so a `pattern` inside them is not a keyword and is not looked at.
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies'];
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items'];
const SCHEMAS = [
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'items',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
  'additionalItems',
];

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every `pattern` and `patternProperties` key RE2 cannot run, with its path. */
function patternProblems(schema: unknown, field: string, at: string[] = []): string[] {
  if (!isObject(schema)) return [];
  const problems: string[] = [];
  const check = (pattern: string, path: string[]) => {
    const problem = regexProblem(pattern);
    if (problem !== null) problems.push(`${field}${dottedSegments(path)}: ${problem}`);
  };
  if (typeof schema.pattern === 'string') check(schema.pattern, [...at, 'pattern']);
  if (isObject(schema.patternProperties))
    for (const key of Object.keys(schema.patternProperties)) check(key, [...at, 'patternProperties', key]);
  for (const keyword of SCHEMA_MAPS) {
    const map = schema[keyword];
    if (isObject(map)) for (const [name, sub] of Object.entries(map)) problems.push(...patternProblems(sub, field, [...at, keyword, name]));
  }
  for (const keyword of SCHEMA_LISTS) {
    const list = schema[keyword];
    if (Array.isArray(list)) list.forEach((sub, index) => problems.push(...patternProblems(sub, field, [...at, keyword, String(index)])));
  }
  for (const keyword of SCHEMAS) problems.push(...patternProblems(schema[keyword], field, [...at, keyword]));
  return problems;
}

/** One message per path (the first): a bad `type` also fails the meta-schema's anyOf, which adds nothing. */
function describe(prefix: string, errors: readonly ErrorObject[] | null | undefined): string[] {
  const byPath = new Map<string, string>();
  for (const error of errors ?? []) {
    const path = `${prefix}${dotted(error.instancePath)}`;
    if (!byPath.has(path)) byPath.set(path, `${path}: ${error.message ?? 'is invalid'}`);
  }
  return [...byPath.values()];
}

/**
 * Everything wrong with `schema` as a tool input schema, each message starting with `field` and the path inside
 * it; empty when it is usable.
 */
export function inputSchemaProblems(schema: Record<string, unknown>, field = 'input_schema'): string[] {
  const declared = schema.$schema;
  if (declared !== undefined && declared !== DRAFT_2020_12 && declared !== `${DRAFT_2020_12}#`) {
    return [`${field}.$schema: only JSON Schema draft 2020-12 is supported ("${DRAFT_2020_12}"); leave $schema out or use that`];
  }
  if (!ajv.validateSchema(schema)) return describe(field, ajv.errors);
  const patterns = patternProblems(schema, field);
  if (patterns.length > 0) return patterns;
  try {
    ajv.compile(schema);
    ajv.removeSchema(schema);
    return [];
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const ref = /can't resolve reference (\S+)/.exec(message);
    if (ref) return [`${field}: $ref ${ref[1]} cannot be resolved; only references inside the schema (such as "#/$defs/name") are allowed`];
    return [`${field}: ${message.split('\n')[0]?.slice(0, 200) ?? 'is not a usable JSON Schema'}`];
  }
}

/** Validates a value against a tool's input schema; returns the problems (empty when valid). */
export type InputValidator = (value: unknown) => string[];

/** Compiles a schema that passed `inputSchemaProblems`. */
export function compileInputSchema(schema: Record<string, unknown>): InputValidator {
  const validate: ValidateFunction = ajv.compile(schema);
  ajv.removeSchema(schema);
  return (value) => (validate(value) ? [] : describe('arguments', validate.errors));
}
