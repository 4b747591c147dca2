// A small HTTP/1.1 client over keep-alive connections, for the requests a benchmark makes itself (submitting
// jobs, polling their status, a constant-rate load): node:http costs the load generator less CPU per request than
// fetch, and its timings are taken around exactly one request.
import http from 'node:http';

interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface HttpClient {
  request(method: 'GET' | 'POST', url: string, headers: Record<string, string>, body?: string, timeoutMs?: number): Promise<HttpAnswer>;
  /** Closes every connection (the client cannot be used afterwards). */
  close(): void;
}

/** `maxSockets` caps the connections per server; requests beyond it wait in the client's queue. */
export function createHttpClient({ maxSockets = 64 }: { maxSockets?: number } = {}): HttpClient {
  const agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  return {
    request(method, url, headers, body, timeoutMs = 30_000) {
      return new Promise<HttpAnswer>((resolve, reject) => {
        const target = new URL(url);
        const request = http.request(
          {
            agent,
            method,
            hostname: target.hostname,
            port: target.port,
            path: `${target.pathname}${target.search}`,
            headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
            timeout: timeoutMs,
          },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('end', () =>
              resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }),
            );
            response.on('error', reject);
          },
        );
        request.on('timeout', () => request.destroy(new Error(`${method} ${url}: no answer within ${timeoutMs} ms`)));
        request.on('error', reject);
        request.end(body);
      });
    },
    close() {
      agent.destroy();
    },
  };
}
