// One keep-alive connection pool per service behind the gateway.
import { Pool } from 'undici';
import { UPSTREAM_NAMES, type UpstreamName } from '../routes';

export interface Upstream {
  readonly name: UpstreamName;
  /** How error details name the service: "The job-status service is unavailable." */
  readonly label: string;
  readonly origin: string;
  /** Path prefix of the service's base URL ('' for none), put before every forwarded path. */
  readonly basePath: string;
  readonly pool: Pool;
}

export type Upstreams = Readonly<Record<UpstreamName, Upstream>>;

const LABELS: Record<UpstreamName, string> = {
  news: 'news',
  'stock-report': 'stock-report',
  analysis: 'analysis',
  chat: 'chat',
  jobs: 'job-status',
  portal: 'portal',
};

export interface UpstreamOptions {
  connectTimeoutMs: number;
}

export function createUpstream(name: UpstreamName, baseUrl: string, { connectTimeoutMs }: UpstreamOptions): Upstream {
  const url = new URL(baseUrl);
  return {
    name,
    label: LABELS[name],
    origin: url.origin,
    basePath: url.pathname.replace(/\/+$/, ''),
    // No cap on connections: every open event stream holds one for its whole life. Idle connections are
    // closed before the service's own keep-alive timeout would (undici honours its Keep-Alive header).
    pool: new Pool(url.origin, { connect: { timeout: connectTimeoutMs } }),
  };
}

export function createUpstreams(baseUrls: Readonly<Record<UpstreamName, string>>, options: UpstreamOptions): Upstreams {
  const entries = UPSTREAM_NAMES.map((name) => [name, createUpstream(name, baseUrls[name], options)] as const);
  return Object.fromEntries(entries) as Record<UpstreamName, Upstream>;
}

/** Closes every pool: waits for requests in flight (call after draining), then closes the connections. */
export async function closeUpstreams(upstreams: Upstreams): Promise<void> {
  await Promise.all(Object.values(upstreams).map((upstream) => upstream.pool.close()));
}

/** Closes every pool at once, aborting requests in flight. */
export async function destroyUpstreams(upstreams: Upstreams): Promise<void> {
  await Promise.all(Object.values(upstreams).map((upstream) => upstream.pool.destroy()));
}
