// The tool form of the portal: form fields → the same CustomerToolCreateRequest the API takes, so the portal and
// the API accept exactly the same tools and say the same things about bad ones, field by field.
import { CustomerToolCreateRequest, CustomerToolProduct, RESERVED_TOOL_NAMES, formatZodError, prototypeKeyIssues } from '@fin/contracts';
import type { StoredTool } from '@fin/customer-tools';
import { z } from 'zod';
import { html, problemList, type Html } from './html';

export type FieldProblems = Map<string, string[]>;

/** What the form showed (and shows again after a problem): never header values. */
export interface ToolFormValues {
  name: string;
  description: string;
  endpoint: string;
  method: string;
  input_schema: string;
  headerNames: string[];
  enabled: boolean;
  timeout_ms: string;
  products: string[];
}

const PRODUCTS = CustomerToolProduct.options;

const text = (value: unknown): string =>
  typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : '';
const list = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : typeof value === 'string' ? [value] : [];

export function valuesOf(tool: StoredTool): ToolFormValues {
  return {
    name: tool.name,
    description: tool.description,
    endpoint: tool.endpoint,
    method: tool.method,
    input_schema: JSON.stringify(tool.inputSchema, null, 2),
    headerNames: tool.headerNames,
    enabled: tool.enabled,
    timeout_ms: String(tool.timeoutMs),
    products: tool.products,
  };
}

export const EMPTY_VALUES: ToolFormValues = {
  name: '',
  description: '',
  endpoint: 'https://',
  method: 'POST',
  input_schema: JSON.stringify(
    { type: 'object', properties: { account: { type: 'string', description: 'The account id' } }, required: ['account'] },
    null,
    2,
  ),
  headerNames: [],
  enabled: true,
  timeout_ms: '10000',
  products: [...PRODUCTS],
};

export function addProblem(problems: FieldProblems, field: string, message: string): void {
  problems.set(field, [...(problems.get(field) ?? []), message]);
}

/** `input_schema.properties.a: must be …` → field input_schema. */
export function addDetail(problems: FieldProblems, detail: string): void {
  for (const part of detail.split('; ')) {
    const field = /^([a-z_]+)/.exec(part)?.[1] ?? 'form';
    addProblem(problems, field, part);
  }
}

/**
 * Parses the submitted form. `existingHeaders`: on edit, a blank headers box keeps the stored headers (their
 * values are never shown), unless "remove all headers" is ticked.
 */
export function parseToolForm(
  body: Record<string, unknown>,
  { editing }: { editing: boolean },
): { values: ToolFormValues; request?: CustomerToolCreateRequest; problems: FieldProblems } {
  const problems: FieldProblems = new Map();
  const values: ToolFormValues = {
    name: text(body.name).trim(),
    description: text(body.description),
    endpoint: text(body.endpoint).trim(),
    method: text(body.method),
    input_schema: text(body.input_schema),
    headerNames: [],
    enabled: text(body.enabled) === 'on',
    timeout_ms: text(body.timeout_ms).trim(),
    products: list(body.products),
  };

  let inputSchema: unknown;
  try {
    inputSchema = JSON.parse(values.input_schema);
  } catch (error) {
    addProblem(
      problems,
      'input_schema',
      `input_schema: is not valid JSON (${error instanceof SyntaxError ? error.message : 'cannot be parsed'})`,
    );
  }

  let headers: Record<string, string> | undefined;
  const headerText = text(body.headers);
  if (text(body.clear_headers) === 'on') headers = {};
  else if (headerText.trim() !== '' || !editing) {
    headers = {};
    for (const [index, line] of headerText.split(/\r?\n/).entries()) {
      if (line.trim() === '') continue;
      const colon = line.indexOf(':');
      if (colon <= 0) {
        addProblem(problems, 'headers', `headers: line ${index + 1} must look like "Name: value"`);
        continue;
      }
      headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
    }
  }
  values.headerNames = Object.keys(headers ?? {});

  const timeout = Number(values.timeout_ms);
  const candidate = {
    name: values.name,
    description: values.description,
    endpoint: values.endpoint,
    method: values.method,
    input_schema: inputSchema,
    ...(headers === undefined ? {} : { headers }),
    enabled: values.enabled,
    timeout_ms: values.timeout_ms === '' || !Number.isFinite(timeout) ? values.timeout_ms : timeout,
    products: values.products,
  };
  // As on the API (route() in @fin/http): prototype keys are refused before the schema copies the value.
  for (const issue of prototypeKeyIssues(inputSchema, ['input_schema'])) addDetail(problems, formatZodError(new z.ZodError([issue])));
  const parsed = CustomerToolCreateRequest.safeParse(candidate);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      if (issue.path[0] === 'input_schema' && problems.has('input_schema')) continue;
      addDetail(problems, formatZodError(new z.ZodError([issue])));
    }
  }
  return problems.size === 0 && parsed.success ? { values, request: parsed.data, problems } : { values, problems };
}

function fieldProblems(problems: FieldProblems, field: string): Html {
  const messages = problems.get(field) ?? [];
  if (messages.length === 0) return html``;
  return html`<p class="field-error" id="${field}-error">${messages.join('; ')}</p>`;
}

const invalid = (problems: FieldProblems, field: string) =>
  problems.has(field) ? html`aria-invalid="true" aria-describedby="${field}-error"` : html``;

export function toolForm({
  action,
  values,
  problems,
  csrf,
  editing,
}: {
  action: string;
  values: ToolFormValues;
  problems: FieldProblems;
  csrf: string;
  editing: boolean;
}): Html {
  const all = [...problems.values()].flat();
  return html`${problemList(all)}
<form method="post" action="${action}" class="tool-form" novalidate>
  <input type="hidden" name="csrf" value="${csrf}">
  <label for="name">Name <small>what the model calls it: a letter, then letters, digits or _ (at most 64); not ${RESERVED_TOOL_NAMES.join(' or ')}, the service's own tools</small></label>
  <input id="name" name="name" value="${values.name}" autocomplete="off" spellcheck="false" ${invalid(problems, 'name')}>
  ${fieldProblems(problems, 'name')}
  <label for="description">Description <small>tells the model what the tool does and when to use it</small></label>
  <textarea id="description" name="description" rows="3" ${invalid(problems, 'description')}>${values.description}</textarea>
  ${fieldProblems(problems, 'description')}
  <label for="endpoint">Endpoint <small>https:// URL on the public internet</small></label>
  <input id="endpoint" name="endpoint" value="${values.endpoint}" spellcheck="false" ${invalid(problems, 'endpoint')}>
  ${fieldProblems(problems, 'endpoint')}
  <label for="method">Method <small>POST sends the arguments as a JSON body, GET as query parameters</small></label>
  <select id="method" name="method">${['POST', 'GET'].map((method) => html`<option ${values.method === method ? html`selected` : ''}>${method}</option>`)}</select>
  ${fieldProblems(problems, 'method')}
  <label for="input_schema">Input schema <small>JSON Schema (draft 2020-12) of the arguments, with "type": "object"</small></label>
  <textarea id="input_schema" name="input_schema" rows="10" class="code" spellcheck="false" data-json ${invalid(problems, 'input_schema')}>${values.input_schema}</textarea>
  ${fieldProblems(problems, 'input_schema')}
  <label for="headers">Headers <small>one "Name: value" per line, e.g. Authorization: Bearer …; values are stored encrypted and never shown again${editing ? '. Leave empty to keep the stored headers (only while the endpoint stays on the same origin)' : ''}</small></label>
  ${values.headerNames.length > 0 && editing ? html`<p class="note">Stored headers: ${values.headerNames.join(', ')}</p>` : ''}
  <textarea id="headers" name="headers" rows="3" class="code" spellcheck="false" autocomplete="off" ${invalid(problems, 'headers')}></textarea>
  ${editing ? html`<label class="check"><input type="checkbox" name="clear_headers"> Remove all stored headers</label>` : ''}
  ${fieldProblems(problems, 'headers')}
  <label for="timeout_ms">Time limit <small>milliseconds, 100 to 30000</small></label>
  <input id="timeout_ms" name="timeout_ms" inputmode="numeric" value="${values.timeout_ms}" ${invalid(problems, 'timeout_ms')}>
  ${fieldProblems(problems, 'timeout_ms')}
  <fieldset><legend>Products that may use it</legend>
  ${PRODUCTS.map((product) => html`<label class="check"><input type="checkbox" name="products" value="${product}" ${values.products.includes(product) ? html`checked` : ''}> ${product}</label>`)}
  </fieldset>
  ${fieldProblems(problems, 'products')}
  <label class="check"><input type="checkbox" name="enabled" ${values.enabled ? html`checked` : ''}> Enabled</label>
  ${fieldProblems(problems, 'form')}
  <p><button type="submit">${editing ? 'Save changes' : 'Create tool'}</button> <a href="/portal/tools">Cancel</a></p>
</form>`;
}
