// A tool's `input_schema` is a real JSON Schema (draft 2020-12, what function-calling APIs take): checked against
// the meta-schema and compiled with Ajv when the tool is registered, so a schema the model could never satisfy
// (or that would fail later at call time) is a 400 naming the field at once. The same compiled schema
// validates the arguments the model sends before any request leaves.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';

const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

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
});

/** `/properties/age/type` → `properties.age.type`, as the other validation messages write paths. */
function dotted(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((segment) => (/^[A-Za-z_$][\w$]*$/.test(segment) ? `.${segment}` : /^\d+$/.test(segment) ? `[${segment}]` : `[${JSON.stringify(segment)}]`))
    .join('');
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
