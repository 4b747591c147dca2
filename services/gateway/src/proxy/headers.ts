// Which headers cross the gateway. Hop-by-hop headers belong to one connection; the API key stops here (the
// services get the signed identity instead), except on its way to the MCP service, which calls the API back
// through the gateway with it; identity headers a client sends are dropped so that only the
// gateway's signed ones reach a service.
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { HOP_BY_HOP_HEADERS } from '@fin/contracts';
import { IDENTITY_HEADER_NAMES } from '@fin/http';
import { TRACEPARENT_HEADER, traceHeaders } from '@fin/log';
import type { Request } from 'express';

const DROPPED_FROM_REQUESTS = new Set([
  ...HOP_BY_HOP_HEADERS,
  'host',
  'x-api-key',
  // The body is forwarded as read (decompressed, at most the size limit); the client computes its length.
  'content-length',
  'content-encoding',
  'expect',
  // The gateway does not compress event streams, so it asks services not to compress anything.
  'accept-encoding',
  'x-request-id',
  // Replaced by the gateway's own span of the caller's trace (tracestate passes unchanged).
  TRACEPARENT_HEADER,
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  ...IDENTITY_HEADER_NAMES,
]);

/** Credentials of a browser session: forwarded to the portal's pages, never to the API's services. */
const BROWSER_CREDENTIALS = new Set(['cookie', 'authorization']);

const DROPPED_FROM_RESPONSES = new Set([...HOP_BY_HOP_HEADERS, 'x-request-id']);

const NONE: ReadonlySet<string> = new Set();

/** Headers named in Connection are hop-by-hop too ("keep-alive" and "close", the usual values, name none that are sent). */
function connectionTokens(headers: IncomingHttpHeaders): ReadonlySet<string> {
  const value = headers.connection;
  if (value === undefined || value === 'keep-alive' || value === 'close') return NONE;
  const text = Array.isArray(value) ? value.join(',') : value;
  return new Set(
    text
      .split(',')
      .map((token) => token.trim().toLowerCase())
      .filter((token) => token !== ''),
  );
}

export interface ForwardedRequestHeaders {
  /** Keep cookies and Authorization (the portal's web pages). */
  browserCredentials: boolean;
  /**
   * Keep X-API-Key: the MCP service's tools call the public API with the caller's own key, so that the caller's
   * scopes, rate limits and cache apply to them exactly as to direct requests. No other service ever sees a key.
   */
  apiKey?: boolean;
}

/**
 * X-Forwarded-For as this hop passes it on: what came in, with the address the client connected from appended, as
 * every proxy does. A service behind the gateway counts clients by the entry its trusted hops appended (the portal's
 * throttles: PORTAL_CLIENT_ADDRESS_HOPS), so the gateway appends in both shapes: over HTTP and in process.
 */
export function forwardedForThisHop(req: Request): string | undefined {
  const forwardedFor = req.headers['x-forwarded-for'];
  const clientAddress = req.socket.remoteAddress;
  if (clientAddress === undefined) return typeof forwardedFor === 'string' ? forwardedFor : undefined;
  return typeof forwardedFor === 'string' ? `${forwardedFor}, ${clientAddress}` : clientAddress;
}

/**
 * The headers sent to the service (the identity headers are added to this object by the caller, the request id
 * among them: X-Request-Id is signed).
 */
export function requestHeaders(
  req: Request,
  { browserCredentials, apiKey = false }: ForwardedRequestHeaders,
): Record<string, string | string[]> {
  const { headers } = req;
  const named = connectionTokens(headers);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || DROPPED_FROM_REQUESTS.has(name) || named.has(name)) continue;
    if (!browserCredentials && BROWSER_CREDENTIALS.has(name)) continue;
    out[name] = value;
  }
  const key = headers['x-api-key'];
  if (apiKey && typeof key === 'string') out['x-api-key'] = key;
  const forwardedFor = forwardedForThisHop(req);
  if (forwardedFor !== undefined) out['x-forwarded-for'] = forwardedFor;
  const proto = headers['x-forwarded-proto'];
  // No proxy is trusted ('trust proxy' is off), so express's req.protocol is the connection's own.
  out['x-forwarded-proto'] =
    typeof proto === 'string' ? proto : (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http';
  const host = headers['x-forwarded-host'] ?? headers.host;
  if (typeof host === 'string') out['x-forwarded-host'] = host;
  const trace = traceHeaders()[TRACEPARENT_HEADER];
  if (trace !== undefined) out[TRACEPARENT_HEADER] = trace;
  return out;
}

/** The upstream response headers the client gets, minus hop-by-hop ones and those listed in `also`. */
export function responseHeaders(headers: IncomingHttpHeaders, also: readonly string[] = []): Record<string, string | string[]> {
  const named = connectionTokens(headers);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || DROPPED_FROM_RESPONSES.has(name) || named.has(name) || also.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/**
 * Sets the upstream response headers the client gets (those of responseHeaders(headers)) on `res`, exactly as
 * given (express's res.set would add a charset to Content-Type), without an object between.
 */
export function setResponseHeaders(res: ServerResponse, headers: IncomingHttpHeaders): void {
  const named = connectionTokens(headers);
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || DROPPED_FROM_RESPONSES.has(name) || named.has(name)) continue;
    res.setHeader(name, value);
  }
}
