// Every example the OpenAPI document shows is valid against the schema it illustrates, checked by a validator
// nobody here wrote (Ajv, JSON Schema 2020-12, the dialect of OpenAPI 3.1): schema `examples`, and the `example`
// and `examples` of media types, parameters and headers. A client generated from the document, or a reader who
// copies an example, gets something the API itself would send or accept. (Two did not: StockReportResponse and
// AnalysisResult showed results without their required `citations`.)
import { Ajv2020 } from 'ajv/dist/2020';
import { createOpenApiDocument } from '../src';

type Json = Record<string, unknown>;

interface Example {
  /** JSON pointer of the example in the document. */
  where: string;
  /** JSON pointer of the schema it illustrates. */
  schema: string;
  value: unknown;
}

const pointer = (path: readonly (string | number)[]) =>
  `#/${path.map((part) => String(part).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

/** Every example of the document with the schema it belongs to. */
function examplesOf(document: Json): Example[] {
  const found: Example[] = [];
  const walk = (node: unknown, path: (string | number)[]): void => {
    if (Array.isArray(node)) {
      node.forEach((item, index) => walk(item, [...path, index]));
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const object = node as Json;
    const inSchemas = path.includes('schema') || path.includes('schemas') || path.includes('properties');
    // A schema's own examples (JSON Schema's `examples` array).
    if (inSchemas && Array.isArray(object.examples))
      object.examples.forEach((value: unknown, index) =>
        found.push({ where: pointer([...path, 'examples', index]), schema: pointer(path), value }),
      );
    // A media type, parameter or header: `schema` beside `example` or `examples: {name: {value}}`.
    if (typeof object.schema === 'object' && object.schema !== null) {
      const schema = pointer([...path, 'schema']);
      if ('example' in object) found.push({ where: pointer([...path, 'example']), schema, value: object.example });
      if (typeof object.examples === 'object' && object.examples !== null && !Array.isArray(object.examples))
        for (const [name, example] of Object.entries(object.examples as Record<string, Json>))
          if ('value' in example) found.push({ where: pointer([...path, 'examples', name]), schema, value: example.value });
    }
    for (const [key, child] of Object.entries(object)) {
      // An example's own value is data, not more of the document.
      if (key === 'example' || (key === 'examples' && (inSchemas || Array.isArray(child)))) continue;
      walk(child, [...path, key]);
    }
  };
  walk(document, []);
  return found;
}

describe('the examples of the OpenAPI document', () => {
  const document = JSON.parse(JSON.stringify(createOpenApiDocument())) as Json;
  // The whole document as one schema resource, so that every `#/components/...` reference resolves in it.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ ...document, $id: 'https://api.example.com/openapi.json' });
  const examples = examplesOf(document);
  const validate = (example: Example) => {
    const check = ajv.compile({ $ref: `https://api.example.com/openapi.json${example.schema}` });
    return check(example.value) ? [] : (check.errors ?? []).map((error) => `${error.instancePath || '/'} ${error.message ?? ''}`);
  };

  it('are many, from schemas, bodies, parameters and headers', () => {
    expect(examples.length).toBeGreaterThan(50);
    expect(examples.some((example) => example.schema === '#/components/schemas/StockReportResponse')).toBe(true);
    expect(examples.some((example) => example.schema === '#/components/schemas/AnalysisResult')).toBe(true);
    expect(examples.some((example) => example.where.includes('/parameters/'))).toBe(true);
  });

  it('are each valid against their schema', () => {
    const problems = examples.flatMap((example) => validate(example).map((problem) => `${example.where}: ${problem}`));
    expect(problems).toEqual([]);
  });

  it('are checked by a validator that refuses a broken example', () => {
    const report = examples.find((example) => example.schema === '#/components/schemas/StockReportResponse') as Example;
    const { citations: _citations, ...withoutCitations } = ((report.value as Json).detailed_analysis as Json[])[0] as Json;
    const broken = { ...(report.value as Json), detailed_analysis: [withoutCitations] };
    expect(validate({ ...report, value: broken }).join('; ')).toContain("must have required property 'citations'");
  });

  it('include none for an optional header: a "try it" client would send it by default (the /docs page did, with Idempotency-Key)', () => {
    const parameters = Object.values(document.paths as Record<string, Record<string, { parameters?: Json[] }>>).flatMap((item) =>
      Object.values(item).flatMap((operation) => operation.parameters ?? []),
    );
    const resolved = parameters.map((parameter) =>
      typeof parameter.$ref === 'string'
        ? ((document.components as { parameters: Record<string, Json> }).parameters[parameter.$ref.split('/').pop() ?? ''] ?? {})
        : parameter,
    );
    const optionalHeaders = resolved.filter((parameter) => parameter.in === 'header' && parameter.required !== true);
    expect(optionalHeaders.map((parameter) => parameter.name)).toEqual(
      expect.arrayContaining(['Idempotency-Key', 'Cache-Control', 'X-Request-Id']),
    );
    const withExamples = optionalHeaders.filter(
      (parameter) => 'example' in parameter || 'examples' in parameter || 'examples' in ((parameter.schema as Json | undefined) ?? {}),
    );
    expect(withExamples.map((parameter) => parameter.name)).toEqual([]);
  });
});
