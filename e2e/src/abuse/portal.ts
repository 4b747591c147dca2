// A browser's session of the web portal, through the gateway's /portal pass-through: sign in with an API key (the
// double-submit CSRF token of the sign-in form), then press a tool's Test button (the synchronizer token of its
// form). The Test button calls the tool through the same executor the AI's calls go through.
export interface PortalSession {
  /** Presses Test on the tool with `input`; resolves to the outcome the page shows (e.g. blocked_address). */
  test(toolId: string, input: unknown): Promise<string | undefined>;
}

const csrf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

export async function signIn(baseUrl: string, apiKey: string): Promise<PortalSession> {
  const cookies = new Map<string, string>();
  const go = async (method: 'GET' | 'POST', path: string, form?: Record<string, string>) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        Cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(form === undefined ? {} : { 'Content-Type': 'application/x-www-form-urlencoded' }),
      },
      ...(form === undefined ? {} : { body: new URLSearchParams(form).toString() }),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const index = pair.indexOf('=');
      if (index > 0) cookies.set(pair.slice(0, index), pair.slice(index + 1));
    }
    return { status: res.status, html: await res.text() };
  };
  const login = await go('GET', '/portal/login');
  const signedIn = await go('POST', '/portal/login', { csrf: csrf(login.html), api_key: apiKey });
  if (signedIn.status !== 303) throw new Error(`signing in to the portal answered ${signedIn.status}`);
  return {
    async test(toolId, input) {
      const form = await go('GET', `/portal/tools/${toolId}/test`);
      if (form.status !== 200) throw new Error(`the test page answered ${form.status}`);
      const tested = await go('POST', `/portal/tools/${toolId}/test`, { csrf: csrf(form.html), input: JSON.stringify(input) });
      if (tested.status !== 200) throw new Error(`pressing Test answered ${tested.status}`);
      return /id="outcome">([a-z_]+)</.exec(tested.html)?.[1];
    },
  };
}
