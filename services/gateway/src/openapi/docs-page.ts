// A self-contained HTML page rendering the OpenAPI document: no script, no CDN, no external asset. Each route
// with its description, parameters, request body and responses; every schema below, linked by its $ref.

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const field = (value: unknown, key: string): Json => {
  const child = isObject(value) ? value[key] : undefined;
  return isObject(child) ? child : {};
};
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] ?? char);
}

/** Paragraphs, with `code` spans. */
function prose(value: string): string {
  return value
    .split(/\n{2,}/)
    .map((paragraph) => `<p>${escapeHtml(paragraph).replace(/`([^`]+)`/g, '<code>$1</code>')}</p>`)
    .join('');
}

const anchor = (kind: string, name: string) => `${kind}-${name.replace(/[^\w-]/g, '_')}`;

/** A schema as indented JSON, its $refs turned into links to the components further down. */
function schemaBlock(schema: unknown): string {
  const json = escapeHtml(JSON.stringify(schema, null, 2));
  const linked = json.replace(
    /&quot;#\/components\/(schemas|responses|headers|parameters)\/([^&]+)&quot;/g,
    (_match, kind: string, name: string) => `&quot;<a href="#${anchor(kind, name)}">#/components/${kind}/${name}</a>&quot;`,
  );
  return `<pre>${linked}</pre>`;
}

function refName(value: unknown): string | undefined {
  const ref = isObject(value) ? value.$ref : undefined;
  return typeof ref === 'string' ? ref.split('/').pop() : undefined;
}

function parameters(operation: Json): string {
  const list = Array.isArray(operation.parameters) ? operation.parameters : [];
  if (list.length === 0) return '';
  const rows = list.map((parameter: unknown) => {
    const name = refName(parameter);
    if (name !== undefined) return `<tr><td colspan="4"><a href="#${anchor('parameters', name)}">${escapeHtml(name)}</a></td></tr>`;
    const p = isObject(parameter) ? parameter : {};
    return `<tr><td><code>${escapeHtml(text(p.name))}</code></td><td>${escapeHtml(text(p.in))}</td><td>${p.required === true ? 'required' : 'optional'}</td><td>${escapeHtml(text(p.description))}${schemaBlock(p.schema)}</td></tr>`;
  });
  return `<h4>Parameters</h4><table><tr><th>Name</th><th>In</th><th></th><th>Description and schema</th></tr>${rows.join('')}</table>`;
}

function content(value: unknown): string {
  return Object.entries(isObject(value) ? value : {})
    .map(([mediaType, media]) => {
      const events = field(media, 'x-sse-events');
      const eventList =
        Object.keys(events).length === 0
          ? ''
          : `<p>Events:</p><ul>${Object.entries(events)
              .map(
                ([event, ref]) =>
                  `<li><code>${escapeHtml(event)}</code>: <a href="#${anchor('schemas', refName(ref) ?? '')}">${escapeHtml(refName(ref) ?? '')}</a></li>`,
              )
              .join('')}</ul>`;
      return `<p><code>${escapeHtml(mediaType)}</code></p>${eventList}${schemaBlock(field(media, 'schema'))}`;
    })
    .join('');
}

function responses(operation: Json, components: Json): string {
  const items = Object.entries(field(operation, 'responses')).map(([status, response]) => {
    const name = refName(response);
    const resolved = name === undefined ? response : field(field(components, 'responses'), name);
    const link = name === undefined ? '' : ` (<a href="#${anchor('responses', name)}">${escapeHtml(name)}</a>)`;
    const headers = Object.keys(field(resolved, 'headers'));
    const headerNote =
      headers.length === 0 ? '' : `<p>Headers: ${headers.map((header) => `<code>${escapeHtml(header)}</code>`).join(', ')}</p>`;
    return `<details${status.startsWith('2') ? ' open' : ''}><summary><strong>${escapeHtml(status)}</strong> ${escapeHtml(text(isObject(resolved) ? resolved.description : undefined))}${link}</summary>${headerNote}${content(field(resolved, 'content'))}</details>`;
  });
  return `<h4>Responses</h4>${items.join('')}`;
}

function operationSection(path: string, method: string, operation: Json, components: Json): string {
  const id = text(operation.operationId);
  const requestBody = field(operation, 'requestBody');
  const body = Object.keys(requestBody).length === 0 ? '' : `<h4>Request body</h4>${content(field(requestBody, 'content'))}`;
  return `<section id="${anchor('op', id)}">
<h3><span class="method ${escapeHtml(method)}">${escapeHtml(method.toUpperCase())}</span> <code>${escapeHtml(path)}</code> — ${escapeHtml(text(operation.summary))}</h3>
${prose(text(operation.description))}
${parameters(operation)}${body}${responses(operation, components)}
</section>`;
}

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:1100px;margin:0 auto;padding:1rem 2rem;color:#1d2430}
pre{background:#f4f6f8;padding:.6rem;overflow:auto;font-size:12px;max-height:28rem}code{font-size:90%}
section{border-top:1px solid #dde2e8;padding:.5rem 0}table{border-collapse:collapse;width:100%}td,th{border:1px solid #dde2e8;padding:.3rem;text-align:left;vertical-align:top}
.method{display:inline-block;min-width:4.5rem;text-align:center;border-radius:4px;color:#fff;font-size:13px;padding:.1rem .3rem}
.get{background:#2f6fb5}.post{background:#2e8b57}.put{background:#b7791f}.delete{background:#c0392b}summary{cursor:pointer}`;

/** The docs page for `document` (an OpenAPI 3.1 document as JSON). */
export function renderDocsPage(document: unknown): string {
  const info = field(document, 'info');
  const components = field(document, 'components');
  const title = escapeHtml(text(info.title));
  const sections: string[] = [];
  const toc: string[] = [];
  for (const [path, item] of Object.entries(field(document, 'paths'))) {
    for (const [method, operation] of Object.entries(isObject(item) ? item : {})) {
      if (!isObject(operation)) continue;
      sections.push(operationSection(path, method, operation, components));
      toc.push(
        `<li><a href="#${anchor('op', text(operation.operationId))}"><code>${escapeHtml(method.toUpperCase())} ${escapeHtml(path)}</code></a> — ${escapeHtml(text(operation.summary))}</li>`,
      );
    }
  }
  const componentSections = (['schemas', 'responses', 'headers', 'parameters'] as const)
    .map((kind) => {
      const entries = Object.entries(field(components, kind));
      if (entries.length === 0) return '';
      return `<h2>Components: ${kind}</h2>${entries.map(([name, value]) => `<section id="${anchor(kind, name)}"><h3><code>${escapeHtml(name)}</code></h3>${schemaBlock(value)}</section>`).join('')}`;
    })
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} — API reference</title><style>${STYLE}</style></head>
<body><h1>${title} <small>${escapeHtml(text(info.version))}</small></h1>
${prose(text(info.description))}
<p>Machine-readable: <a href="/api/openapi.json">/api/openapi.json</a> (OpenAPI ${escapeHtml(text(isObject(document) ? document.openapi : undefined))}).</p>
<h2>Routes</h2><ul>${toc.join('')}</ul>
${sections.join('\n')}
${componentSections}
</body></html>`;
}
