// What every answer of the API must look like, whatever it was sent: never a 5xx; a rejection is a 4xx whose body
// is the spec's error body with status_code equal to the HTTP status; a success has the shape the route documents.
import { ERROR_STATUS, ErrorBody, responseSchema, type ApiRoute, type SuccessStatus } from '@fin/contracts';
import type { WireResponse } from './http';

function header(response: WireResponse, name: string): string {
  const value = response.headers[name];
  return Array.isArray(value) ? value.join(', ') : (value ?? '');
}

function shown(body: Buffer): string {
  const text = body.toString('utf8');
  return text.length > 600 ? `${text.slice(0, 600)}… (${body.length} bytes)` : text;
}

/** The response as a failure message shows it. */
export function describeResponse(response: WireResponse): string {
  return `HTTP ${response.status}, Content-Type ${JSON.stringify(header(response, 'content-type'))}, body: ${shown(response.body) || '(empty)'}`;
}

const INTERNALS =
  /\n\s+at |\(\/[^)]*:\d+:\d+\)|node_modules|\bSQLSTATE\b|duplicate key value|violates .* constraint|syntax error at or near/;

/** The error body of a 4xx/5xx answer, or why it is not one. */
export function parseErrorBody(response: WireResponse): { body: ErrorBody } | { problem: string } {
  if (!header(response, 'content-type').startsWith('application/json')) return { problem: 'the error is not application/json' };
  let json: unknown;
  try {
    json = JSON.parse(response.body.toString('utf8'));
  } catch {
    return { problem: 'the error body is not JSON' };
  }
  const parsed = ErrorBody.strict().safeParse(json);
  if (!parsed.success)
    return {
      problem: `the error body is not {detail, status_code, type}: ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`,
    };
  if (parsed.data.status_code !== response.status)
    return { problem: `status_code ${parsed.data.status_code} differs from the HTTP status` };
  if (ERROR_STATUS[parsed.data.type] !== response.status)
    return { problem: `type ${parsed.data.type} belongs to HTTP ${ERROR_STATUS[parsed.data.type]}` };
  // Internals never reach the client: no stack frames, file paths or driver messages in the detail.
  if (INTERNALS.test(parsed.data.detail)) return { problem: 'the error detail shows internals' };
  return { body: parsed.data };
}

export interface SseEvent {
  event: string;
  data: string;
}

/** The events of a complete text/event-stream body (comments and ids skipped). */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length > 0) events.push({ event, data: data.join('\n') });
  }
  return events;
}

/**
 * Why `response` breaks the API's rules, or undefined when it keeps them. `onRoute`: the request used the route's
 * own method and path, so a success must have the shape the route documents.
 */
export function responseProblem(route: ApiRoute, onRoute: boolean, response: WireResponse): string | undefined {
  const { status } = response;
  if (status >= 500) return `a server error (${status})`;
  if (status >= 400) {
    const parsed = parseErrorBody(response);
    return 'problem' in parsed ? parsed.problem : undefined;
  }
  if (status < 200 || status >= 300) return `an unexpected status ${status}`;
  if (!onRoute) return undefined;
  const documented = route.responses[String(status) as SuccessStatus];
  if (documented === undefined) return `status ${status} is not documented for this route`;
  const contentType = header(response, 'content-type');
  if (status === 204) return response.body.length === 0 ? undefined : 'a 204 with a body';
  if (contentType.startsWith('text/event-stream')) {
    if (documented.events === undefined) return 'an event stream the route does not document';
    const events = parseSse(response.body.toString('utf8'));
    if (events.length === 0) return 'an event stream without events';
    for (const { event, data } of events) {
      const schema = documented.events[event];
      if (schema === undefined) return `an undocumented event ${JSON.stringify(event)}`;
      let json: unknown;
      try {
        json = JSON.parse(data);
      } catch {
        return `event ${event} carries data that is not JSON`;
      }
      const parsed = schema.safeParse(json);
      if (!parsed.success) return `event ${event} does not match its schema: ${parsed.error.message.slice(0, 300)}`;
      if (event === 'error' && (json as { status_code: number }).status_code >= 500) return `the stream ended with a server error: ${data}`;
    }
    return undefined;
  }
  if (contentType.startsWith('text/html')) return documented.html ? undefined : 'an HTML page the route does not document';
  if (!contentType.startsWith('application/json')) return `an undocumented content type ${JSON.stringify(contentType)}`;
  const schema = responseSchema(route, status);
  if (schema === undefined || !('safeParse' in schema)) return 'a JSON body the route does not document';
  let json: unknown;
  try {
    json = JSON.parse(response.body.toString('utf8'));
  } catch {
    return 'a success body that is not JSON';
  }
  const parsed = (schema as { safeParse(value: unknown): { success: boolean; error?: { message: string } } }).safeParse(json);
  return parsed.success ? undefined : `the success body does not match the documented schema: ${parsed.error?.message.slice(0, 300) ?? ''}`;
}
