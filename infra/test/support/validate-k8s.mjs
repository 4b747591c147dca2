// Validates Kubernetes objects offline against the API's schemas, in two passes:
//  1. JSON schema: kubernetes-models (generated from the Kubernetes OpenAPI document) for the core API, and the
//     operators' CRD schemas (@kubernetes-models/keda, strimzi-kafka-operator, cloudnative-pg, gateway-api,
//     prometheus-operator): types, required fields, enums, formats.
//  2. Unknown fields: those schemas allow properties they do not define (so does the API server, which drops them,
//     or rejects them under strict field validation, as `kubectl apply` asks by default). A misspelt field such as
//     `readinesProbe` would pass silently; the same packages' TypeScript types catch it, so every object is
//     type-checked as an object literal of its kind's type, whose excess-property check names the field.
//  Kinds that no package models (the Barman Cloud plugin's ObjectStore) are checked against their CRD's own
//  openAPIV3Schema, vendored in crds/ with the commit it came from, with every object that lists its properties closed
//  to others (the API server prunes unknown fields of a structural schema; here they are errors).
// Reads a JSON array of objects on stdin; prints a JSON array of { index, kind, name, errors } for invalid ones.
// The models are ES modules only, which Jest's CommonJS runtime cannot load: kubernetes.test.ts runs this as a
// child process. TypeScript is the workspace root's.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import ts from 'typescript';

/** The package whose models cover an API group (core and built-in groups: kubernetes-models). */
const PACKAGES = {
  'keda.sh': '@kubernetes-models/keda',
  'kafka.strimzi.io': '@kubernetes-models/strimzi-kafka-operator',
  'postgresql.cnpg.io': '@kubernetes-models/cloudnative-pg',
  'gateway.networking.k8s.io': '@kubernetes-models/gateway-api',
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
};

/** API groups whose kinds are validated against a vendored CRD schema (crds/<plural>.<group>.json). */
const CRD_SCHEMAS = { 'barmancloud.cnpg.io': { ObjectStore: 'objectstores.barmancloud.cnpg.io.json' } };

/** The CRD schema with additionalProperties: false wherever it lists properties and says nothing of others. */
function closed(schema) {
  if (Array.isArray(schema)) return schema.map(closed);
  if (schema === null || typeof schema !== 'object') return schema;
  const copy = Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      key === 'properties' ? Object.fromEntries(Object.entries(value).map(([name, property]) => [name, closed(property)])) : closed(value),
    ]),
  );
  if (copy.properties && copy.additionalProperties === undefined && !copy['x-kubernetes-preserve-unknown-fields'])
    copy.additionalProperties = false;
  return copy;
}

function validateCrd(object, file) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const crd = JSON.parse(readFileSync(path.join(here, 'crds', file), 'utf8'));
  if (object.apiVersion !== `${crd.group}/${crd.version}`) return [`${object.apiVersion} is not the served ${crd.group}/${crd.version}`];
  // metadata is the API server's ObjectMeta, which the CRD leaves open.
  const schema = closed({ ...crd.schema, properties: { ...crd.schema.properties, metadata: { type: 'object' } } });
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  const validate = ajv.compile({
    ...schema,
    properties: { ...schema.properties, apiVersion: { type: 'string' }, kind: { type: 'string' } },
  });
  if (validate(object)) return [];
  return validate.errors.map(
    (error) =>
      `${error.instancePath || '/'} ${error.message}${error.params?.additionalProperty ? `: ${error.params.additionalProperty}` : ''}`,
  );
}

function specifierOf({ apiVersion, kind }) {
  const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
  return `${PACKAGES[group] ?? 'kubernetes-models'}/${apiVersion}/${kind}`;
}

async function validateSchema(object) {
  const group = object.apiVersion?.includes('/') ? object.apiVersion.split('/')[0] : '';
  if (CRD_SCHEMAS[group]) {
    const file = CRD_SCHEMAS[group][object.kind];
    return file ? validateCrd(object, file) : [`no CRD schema for ${object.kind} of ${group}`];
  }
  const specifier = specifierOf(object);
  const module = await import(specifier);
  const Model = module[object.kind];
  if (typeof Model !== 'function') return [`${specifier} has no model ${object.kind}`];
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    if (Array.isArray(error?.errors)) return error.errors.map((item) => `${item.instancePath || '/'} ${item.message}`);
    return [String(error?.message ?? error)];
  }
}

/** Type-checks every object as `const o<i>: I<Kind> = {…}` in one in-memory module; errors by object index. */
function unknownFields(objects) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  // A module next to this file, so the packages resolve from infra/node_modules; .mts, because the models are ESM.
  const file = path.join(here, '__rendered__.mts');
  const imports = objects.map((object, index) => `import type { I${object.kind} as T${index} } from '${specifierOf(object)}';`);
  const constants = objects.map((object, index) => `export const o${index}: T${index} = ${JSON.stringify(object)};`);
  const text = [...imports, ...constants].join('\n');
  const options = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, language, ...rest) =>
    name === file ? ts.createSourceFile(name, text, language) : getSourceFile.call(host, name, language, ...rest);
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? text : readFile.call(host, name));
  const program = ts.createProgram([file], options, host);
  const byIndex = new Map();
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
    const line =
      diagnostic.file && diagnostic.start !== undefined ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line : -1;
    const index = diagnostic.file?.fileName === file && line >= imports.length ? line - imports.length : -1;
    byIndex.set(index, [...(byIndex.get(index) ?? []), message]);
  }
  return byIndex;
}

const objects = JSON.parse(readFileSync(0, 'utf8'));
const invalid = [];
const typed = [];
for (const [index, object] of objects.entries()) {
  const errors = await validateSchema(object).catch((error) => [String(error?.message ?? error)]);
  if (errors.length > 0) invalid.push({ index, kind: object?.kind, name: object?.metadata?.name, errors });
  else typed.push(index);
}
// Only objects whose kind has a package's model are type-checked (an unknown kind is already reported; a vendored
// CRD schema was checked closed already).
const modelled = typed.filter((index) => !CRD_SCHEMAS[objects[index].apiVersion.split('/')[0]]);
const typeErrors = unknownFields(modelled.map((index) => objects[index]));
for (const [position, errors] of typeErrors) {
  const index = position >= 0 ? modelled[position] : -1;
  invalid.push({ index, kind: objects[index]?.kind, name: objects[index]?.metadata?.name, errors });
}
process.stdout.write(JSON.stringify(invalid));
