// The portal's page entries and forms: a form is never refused (the page shows each field's problem itself), a
// repeated name reads as its list of values, and the entries are plain route entries.
import { PORTAL_PAGES, PortalForm, type RouteEntry } from '../src';

describe('portal forms', () => {
  it('reads each declared field as sent, a repeated name as its list, and drops the rest', () => {
    expect(PORTAL_PAGES.createKey.request.body.parse({ csrf: 't', name: 'ci', scopes: ['news', 'chat'], other: 'x' })).toEqual({
      csrf: 't',
      name: 'ci',
      scopes: ['news', 'chat'],
    });
    expect(PORTAL_PAGES.createKey.request.body.parse({ scopes: 'news' })).toEqual({ scopes: 'news' });
  });

  it('never refuses a form: what is not a form reads as an empty one', () => {
    for (const body of [undefined, null, 'csrf=t', 42, { csrf: { nested: true } }]) expect(PortalForm.parse(body)).toEqual({});
    expect(PORTAL_PAGES.createTool.request.body.safeParse(undefined).success).toBe(true);
  });

  it('declares every page under /portal with no key, and a tool or key id as a path parameter', () => {
    const pages: readonly RouteEntry[] = Object.values(PORTAL_PAGES);
    for (const page of pages) {
      expect(page.scope).toBeNull();
      expect(page.path.startsWith('/')).toBe(true);
      if (page.path.includes('{id}'))
        expect(Object.keys(page.request?.params?.shape ?? {})).toEqual(
          page.path.includes('{delivery_id}') ? ['id', 'delivery_id'] : ['id'],
        );
    }
  });
});
