// Server-rendered HTML with escaping by default: every value interpolated into `html` is escaped unless it is
// itself `html` (a fragment built the same way). Customer-typed text (tool names, descriptions, schemas, key
// names, API answers) can therefore never become markup or script.

export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (char) => ENTITIES[char] ?? char);
}

function render(value: unknown): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  if (typeof value === 'string') return escapeHtml(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return value.toString();
  // Templates interpolate text and numbers; anything else is shown as its JSON, never as '[object Object]'.
  if (typeof value === 'function' || typeof value === 'symbol') return '';
  return escapeHtml(JSON.stringify(value));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, index) => {
    out += render(value) + (strings[index + 1] ?? '');
  });
  return new Html(out);
}

export interface LayoutOptions {
  title: string;
  /** The signed-in tenant; absent on the sign-in page. */
  account?: { tenantName: string; csrf: string };
  /** Which navigation item is current. */
  current?: 'tools' | 'keys' | 'webhooks' | 'usage';
  body: Html;
}

export function layout({ title, account, current, body }: LayoutOptions): string {
  const nav = account
    ? html`<nav class="top">
        <a href="/portal/tools" ${current === 'tools' ? html`aria-current="page"` : ''}>Tools</a>
        <a href="/portal/webhooks" ${current === 'webhooks' ? html`aria-current="page"` : ''}>Webhooks</a>
        <a href="/portal/keys" ${current === 'keys' ? html`aria-current="page"` : ''}>API keys</a>
        <a href="/portal/usage" ${current === 'usage' ? html`aria-current="page"` : ''}>Usage</a>
        <span class="tenant">${account.tenantName}</span>
        <form method="post" action="/portal/logout" class="inline"><input type="hidden" name="csrf" value="${account.csrf}"><button type="submit" class="link">Sign out</button></form>
      </nav>`
    : '';
  return `<!doctype html>${
    html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Financial Intelligence API</title>
<link rel="stylesheet" href="/portal/static/portal.css">
<script src="/portal/static/portal.js" defer></script>
</head>
<body>
<header><span class="brand">Financial Intelligence API</span>${nav}</header>
<main>
<h1>${title}</h1>
${body}
</main>
</body>
</html>`.value
  }`;
}

/** A list of problems at the top of a form, announced to screen readers. */
export function problemList(problems: readonly string[]): Html {
  if (problems.length === 0) return html``;
  return html`<div class="problems" role="alert" id="problems"><p>Please correct the following:</p><ul>${problems.map((problem) => html`<li>${problem}</li>`)}</ul></div>`;
}
