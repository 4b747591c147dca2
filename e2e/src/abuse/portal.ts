// A browser's session of the web portal, through the gateway's /portal pass-through: sign in with an API key (the
// double-submit CSRF token of the sign-in form), then press a tool's Test button (the synchronizer token of its
// form). The Test button calls the tool through the same executor the AI's calls go through.
export interface PortalSession {
  /** Presses Test on the tool with `input`; resolves to the outcome the page shows (e.g. blocked_address). */
  test(toolId: string, input: unknown): Promise<string | undefined>;
  /** Presses Test; the page's status, the outcome it shows (none when no call was made) and its listed problems. */
  testPage(toolId: string, input: unknown): Promise<PortalAnswer & { outcome: string | undefined }>;
  /** Saves the tool's edit form with these fields (the form's own values for the rest are not sent: give them all). */
  edit(toolId: string, fields: Record<string, string | string[]>): Promise<PortalAnswer>;
}

interface PortalAnswer {
  /** 303 when a form was accepted (the redirect), 200 with problems when it was not. */
  status: number;
  problems: string[];
}

const csrf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'", '&#96;': '`' };

/** The page's list of problems, as the customer reads them. */
function problemsOf(html: string): string[] {
  const list = /<div class="problems"[^>]*>([\s\S]*?)<\/div>/.exec(html)?.[1] ?? '';
  return [...list.matchAll(/<li>([\s\S]*?)<\/li>/g)].map((match) =>
    (match[1] ?? '').replace(/&(?:amp|lt|gt|quot|#39|#96);/g, (entity) => ENTITIES[entity] ?? entity),
  );
}

export async function signIn(baseUrl: string, apiKey: string): Promise<PortalSession> {
  const cookies = new Map<string, string>();
  const go = async (method: 'GET' | 'POST', path: string, form?: Record<string, string | string[]>) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        Cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(form === undefined ? {} : { 'Content-Type': 'application/x-www-form-urlencoded' }),
      },
      ...(form === undefined
        ? {}
        : {
            body: new URLSearchParams(
              Object.entries(form).flatMap(([name, value]) =>
                (Array.isArray(value) ? value : [value]).map((item): [string, string] => [name, item]),
              ),
            ).toString(),
          }),
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
    async testPage(toolId, input) {
      const form = await go('GET', `/portal/tools/${toolId}/test`);
      if (form.status !== 200) throw new Error(`the test page answered ${form.status}`);
      const tested = await go('POST', `/portal/tools/${toolId}/test`, { csrf: csrf(form.html), input: JSON.stringify(input) });
      return { status: tested.status, outcome: /id="outcome">([a-z_]+)</.exec(tested.html)?.[1], problems: problemsOf(tested.html) };
    },
    async edit(toolId, fields) {
      const form = await go('GET', `/portal/tools/${toolId}/edit`);
      if (form.status !== 200) throw new Error(`the edit page answered ${form.status}`);
      const saved = await go('POST', `/portal/tools/${toolId}`, { csrf: csrf(form.html), ...fields });
      return { status: saved.status, problems: problemsOf(saved.html) };
    },
  };
}
