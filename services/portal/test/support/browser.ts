// A browser's view of the portal: cookies kept between requests, every request signed as the gateway's anonymous
// pass-through signs it, from a client address of the test's choosing (X-Forwarded-For, as the gateway appends it).
import request from 'supertest';
import type { Harness } from './harness';

export const csrfOf = (html: string): string => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

export class Browser {
  private readonly cookies = new Map<string, string>();

  constructor(
    private readonly h: Harness,
    /** The address the gateway saw this browser connect from. */
    private readonly address = '203.0.113.10',
  ) {}

  async go(method: 'get' | 'post', path: string, form?: Record<string, string | string[]>, headers: Record<string, string> = {}) {
    const body =
      form === undefined
        ? undefined
        : new URLSearchParams(
            Object.entries(form).flatMap(([k, v]) =>
              Array.isArray(v) ? v.map((item): [string, string] => [k, item]) : [[k, v] as [string, string]],
            ),
          ).toString();
    const agent = request(this.h.app);
    let req = agent[method](path)
      .set(this.h.signed(method.toUpperCase(), path, null, body))
      .set('X-Forwarded-For', this.address)
      .set(headers);
    if (this.cookies.size > 0) req = req.set('Cookie', [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    if (body !== undefined) req = req.type('form').send(body);
    const res = await req;
    for (const line of (res.headers['set-cookie'] as unknown as string[] | undefined) ?? []) {
      const [pair] = line.split(';');
      const [name, value] = (pair ?? '').split('=');
      if (name === undefined) continue;
      if (value === '' || /Expires=Thu, 01 Jan 1970/.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value ?? '');
    }
    return res;
  }

  /** Signs in with `apiKey`; the response of the sign-in post. */
  async signIn(apiKey: string) {
    const login = await this.go('get', '/portal/login');
    return this.go('post', '/portal/login', { csrf: csrfOf(login.text), api_key: apiKey });
  }
}
