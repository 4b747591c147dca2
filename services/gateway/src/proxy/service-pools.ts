// One keep-alive connection pool per service behind the gateway.
import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import { UPSTREAM_NAMES, type UpstreamName } from '../routes';

export interface ServicePool {
  readonly name: UpstreamName;
  /** How error details name the service: "The job-status service is unavailable." */
  readonly label: string;
  readonly origin: string;
  /** Path prefix of the service's base URL ('' for none), put before every forwarded path. */
  readonly basePath: string;
  readonly pool: Dispatcher;
}

export type ServicePools = Readonly<Record<UpstreamName, ServicePool>>;

const LABELS: Record<UpstreamName, string> = {
  news: 'news',
  'stock-report': 'stock-report',
  analysis: 'analysis',
  chat: 'chat',
  jobs: 'job-status',
  portal: 'portal',
  mcp: 'MCP',
};

export interface ServicePoolOptions {
  connectTimeoutMs: number;
}

/**
 * undici keeps a response's raw header bytes (Buffers sliced from the socket read that carried the head) on the
 * request's controller until the request ends, and for an event stream that is the stream's whole life: each
 * open stream kept its head's read buffer (a few KB, up to 64 KB) and a Buffer per header name and value. The
 * gateway only uses the parsed headers, so the raw ones are let go once they have been parsed.
 */
class ReleaseRawHeaders implements Dispatcher.DispatchHandler {
  constructor(private readonly handler: Dispatcher.DispatchHandler) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.handler.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, socket: Duplex): void {
    this.handler.onRequestUpgrade?.(controller, statusCode, headers, socket);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusMessage?: string,
  ): void {
    this.handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
    (controller as { rawHeaders?: unknown }).rawHeaders = null;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.handler.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    this.handler.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.handler.onResponseError?.(controller, error);
  }
}

const releaseRawHeaders: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (options, handler) =>
  dispatch(options, new ReleaseRawHeaders(handler));

function createServicePool(name: UpstreamName, baseUrl: string, { connectTimeoutMs }: ServicePoolOptions): ServicePool {
  const url = new URL(baseUrl);
  return {
    name,
    label: LABELS[name],
    origin: url.origin,
    basePath: url.pathname.replace(/\/+$/, ''),
    // No cap on connections: every open event stream holds one for its whole life. Idle connections are
    // closed before the service's own keep-alive timeout would (undici honours its Keep-Alive header).
    pool: new Pool(url.origin, { connect: { timeout: connectTimeoutMs } }).compose(releaseRawHeaders),
  };
}

export function createServicePools(baseUrls: Readonly<Record<UpstreamName, string>>, options: ServicePoolOptions): ServicePools {
  const entries = UPSTREAM_NAMES.map((name) => [name, createServicePool(name, baseUrls[name], options)] as const);
  return Object.fromEntries(entries) as Record<UpstreamName, ServicePool>;
}

/** Closes every pool: waits for requests in flight (call after draining), then closes the connections. */
export async function closeServicePools(upstreams: ServicePools): Promise<void> {
  await Promise.all(Object.values(upstreams).map((upstream) => upstream.pool.close()));
}

/** Closes every pool at once, aborting requests in flight. */
export async function destroyServicePools(upstreams: ServicePools): Promise<void> {
  await Promise.all(Object.values(upstreams).map((upstream) => upstream.pool.destroy()));
}
