// Customer tools as an attacker registers them, against the whole system in one process (`npm start`: one event
// loop for the gateway, the portal and every service, so anything that blocks it blocks them all). Two cells:
//  1. ReDoS: catastrophic regular expressions in a tool's input_schema (`pattern`, `patternProperties`, nested in
//     $defs and items), validated against inputs built to make a backtracking engine run for ever, through the
//     portal's Test button, while health probes are sent to the gateway. Every probe must answer and every test
//     must come back refusing the input without calling anything. Patterns RE2 cannot run (backreferences,
//     lookaround) must be refused at registration with a 400 naming the keyword's path.
//  2. Origin change: a tool with a stored Authorization header, re-pointed by PUT (and by the portal's edit form)
//     at every kind of other origin without headers: each must be refused, leaving the tool where it was. A leak is
//     any answer that moved the tool to another origin with the old header values still stored.
import { CustomerTool, CustomerToolCallListResponse, ErrorBody, type CustomerToolCreateRequestInput } from '@fin/contracts';
import { signIn, type PortalSession } from '../../src/abuse/portal';
import { Tally, report } from '../../src/abuse/report';
import { startAbuseTarget, type AbuseTarget } from '../../src/abuse/target';

/** Classic catastrophic patterns (exponential or high-polynomial on a backtracking engine) and a hostile input each. */
const CATASTROPHIC: readonly { pattern: string; input: string }[] = [
  { pattern: '^(a+)+$', input: `${'a'.repeat(50_000)}!` },
  { pattern: '^(a|a)*$', input: `${'a'.repeat(50_000)}!` },
  { pattern: '^(a|aa)+$', input: `${'a'.repeat(50_000)}!` },
  { pattern: '^(\\d+)*$', input: `${'1'.repeat(50_000)}x` },
  { pattern: '^(\\w+\\s?)*$', input: `${'word '.repeat(10_000)}!` },
  { pattern: '^(([a-z])+.)+[A-Z]([a-z])+$', input: 'a'.repeat(50_000) },
  { pattern: '(.*a){25}', input: `${'a'.repeat(24)}${'x'.repeat(20_000)}` },
  {
    pattern: '^([a-zA-Z0-9])(([\\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$',
    input: `${'a'.repeat(50_000)}!`,
  },
];

/** Patterns only a backtracking engine runs; refused at registration, whatever else they would match. */
const UNSUPPORTED: readonly string[] = [
  '^(a+)\\1$',
  '(?<word>\\w+) \\k<word>',
  '^(?=(a+))\\1b$',
  '^(?!.*password).*$',
  '(?<=\\$)\\d+',
  '(?<!x)y',
];

/** Where a pattern sits: the path a refusal names, the schema, and arguments that put the input under it. */
const PLACEMENTS: readonly {
  name: string;
  path: string;
  schema(pattern: string): { type: 'object'; [keyword: string]: unknown };
  args(input: string): Record<string, unknown>;
}[] = [
  {
    name: 'properties.x.pattern',
    path: 'input_schema.properties.x.pattern',
    schema: (pattern) => ({ type: 'object', properties: { x: { type: 'string', pattern } } }),
    args: (input) => ({ x: input }),
  },
  {
    name: 'patternProperties key',
    path: 'input_schema.patternProperties[',
    schema: (pattern) => ({ type: 'object', patternProperties: { [pattern]: { type: 'integer' } }, additionalProperties: false }),
    // The key's tail is kept: a hostile input fails to match at its very end.
    args: (input) => ({ [input.slice(-5_000)]: 'not an integer' }),
  },
  {
    name: '$defs, through items and $ref',
    path: 'input_schema.$defs.word.pattern',
    schema: (pattern) => ({
      type: 'object',
      $defs: { word: { type: 'string', pattern } },
      properties: { list: { type: 'array', items: { $ref: '#/$defs/word' } } },
    }),
    args: (input) => ({ list: ['fine', input] }),
  },
];

describe('customer tools under abuse', () => {
  let target: AbuseTarget;
  let session: PortalSession;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${target.url}${path}`, {
      method,
      headers: { 'X-API-Key': target.keys.acme.valid, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text === '' ? null : JSON.parse(text)) as unknown };
  };
  const tool = (fields: Partial<CustomerToolCreateRequestInput>): CustomerToolCreateRequestInput => ({
    name: 'probe',
    description: 'A probe.',
    endpoint: 'https://api.example.com/positions',
    method: 'POST',
    input_schema: { type: 'object' },
    products: ['news'],
    ...fields,
  });

  beforeAll(async () => {
    target = await startAbuseTarget();
    session = await signIn(target.url, target.keys.acme.valid);
  }, 120_000);

  afterAll(async () => {
    const exitCode = await target?.stop();
    if (exitCode !== 0) throw new Error(`the system did not shut down cleanly (exit ${exitCode})`);
  });

  it('ReDoS: catastrophic patterns validate in linear time while the process keeps answering; unsupported ones are refused naming the field', async () => {
    const figures = { registered: 0, testsRefusingInput: 0, callsMade: 0, refusedAtRegistration: 0, probesAnswered: 0, probesFailed: 0 };
    const problems: string[] = [];

    // Health probes, one after another, for as long as the test calls run: each must answer 200.
    let probing = true;
    const probes = (async () => {
      while (probing) {
        const res = await fetch(`${target.url}/healthz`).catch(() => null);
        if (res?.status === 200) figures.probesAnswered += 1;
        else figures.probesFailed += 1;
        await res?.arrayBuffer();
      }
    })();

    try {
      for (const [index, { pattern, input }] of CATASTROPHIC.entries()) {
        for (const [where, placement] of PLACEMENTS.entries()) {
          const created = await api(
            'POST',
            '/api/customer-tools/',
            tool({ name: `redos_${index}_${where}`, input_schema: placement.schema(pattern) }),
          );
          if (created.status !== 201) {
            problems.push(`${pattern} at ${placement.name}: registration answered ${created.status} ${JSON.stringify(created.body)}`);
            continue;
          }
          figures.registered += 1;
          const id = CustomerTool.parse(created.body).id;
          // Two presses at once, so validation and the probes compete for the one event loop.
          const tested = await Promise.all([session.testPage(id, placement.args(input)), session.testPage(id, placement.args(input))]);
          for (const page of tested) {
            const refusedInput =
              page.status === 200 && page.outcome === undefined && page.problems.some((problem) => problem.startsWith('arguments'));
            if (refusedInput) figures.testsRefusingInput += 1;
            else
              problems.push(
                `${pattern} at ${placement.name}: the test page answered ${page.status}, outcome ${page.outcome ?? 'none'}, problems ${JSON.stringify(page.problems)}`,
              );
          }
          const calls = CustomerToolCallListResponse.parse((await api('GET', `/api/customer-tools/${id}/calls`)).body).calls;
          figures.callsMade += calls.length;
          await api('DELETE', `/api/customer-tools/${id}`);
        }
      }

      for (const pattern of UNSUPPORTED) {
        for (const placement of PLACEMENTS) {
          const refused = await api('POST', '/api/customer-tools/', tool({ name: 'unsupported', input_schema: placement.schema(pattern) }));
          const body = ErrorBody.safeParse(refused.body);
          if (
            refused.status === 400 &&
            body.success &&
            body.data.type === 'validation_error' &&
            body.data.detail.startsWith(placement.path)
          )
            figures.refusedAtRegistration += 1;
          else
            problems.push(
              `${pattern} at ${placement.name}: expected a 400 naming ${placement.path}, got ${refused.status} ${JSON.stringify(refused.body)}`,
            );
        }
      }
    } finally {
      probing = false;
      await probes;
    }

    report(
      'redos',
      `${CATASTROPHIC.length} catastrophic patterns × ${PLACEMENTS.length} placements: ${figures.registered} registered, ${figures.testsRefusingInput} test calls refused their input (${figures.callsMade} calls made); ${figures.refusedAtRegistration} of ${UNSUPPORTED.length * PLACEMENTS.length} unsupported refused at registration naming the field; health probes ${figures.probesAnswered} answered, ${figures.probesFailed} failed`,
      { catastrophic: CATASTROPHIC.map(({ pattern }) => pattern), unsupported: UNSUPPORTED, ...figures },
    );
    expect(problems).toEqual([]);
    expect(figures).toEqual({
      registered: CATASTROPHIC.length * PLACEMENTS.length,
      testsRefusingInput: 2 * CATASTROPHIC.length * PLACEMENTS.length,
      callsMade: 0,
      refusedAtRegistration: UNSUPPORTED.length * PLACEMENTS.length,
      probesAnswered: expect.any(Number),
      probesFailed: 0,
    });
    expect(figures.probesAnswered).toBeGreaterThan(0);
    expect(target.alive()).toBe(true);
  }, 300_000);

  it('origin change: stored header values never follow a tool to another origin, through the API or the portal form', async () => {
    const ORIGINAL = 'https://api.example.com/positions';
    // Each with the origin it means: `same` keeps the stored headers when they are omitted, `other` must refuse.
    const moves: readonly { endpoint: string; origin: 'same' | 'other'; kind: string }[] = [
      { endpoint: 'https://api.example.com/v2/positions?full=1', origin: 'same', kind: 'path and query' },
      { endpoint: 'https://API.Example.COM/positions', origin: 'same', kind: 'host case' },
      { endpoint: 'https://api.example.com:443/positions', origin: 'same', kind: 'default port written out' },
      { endpoint: 'https://collector.evil.example/positions', origin: 'other', kind: 'another host' },
      { endpoint: 'https://api.example.com:8443/positions', origin: 'other', kind: 'another port' },
      { endpoint: 'https://eu.api.example.com/positions', origin: 'other', kind: 'a subdomain' },
      { endpoint: 'https://example.com/positions', origin: 'other', kind: 'the parent domain' },
      { endpoint: 'https://api.example.com.evil.example/positions', origin: 'other', kind: 'a suffix domain' },
      { endpoint: 'https://api.example.com./positions', origin: 'other', kind: 'a trailing dot' },
      { endpoint: 'https://xn--pple-43d.com/positions', origin: 'other', kind: 'a look-alike (punycode)' },
      { endpoint: 'https://93.184.216.34/positions', origin: 'other', kind: 'an address' },
      { endpoint: 'https://[2606:2800:220:1::1]/positions', origin: 'other', kind: 'an IPv6 address' },
    ];
    const outcomes = new Tally();
    const problems: string[] = [];
    let leaks = 0;
    let cells = 0;

    for (const [index, move] of moves.entries()) {
      for (const channel of ['api', 'portal form'] as const) {
        cells += 1;
        const created = await api(
          'POST',
          '/api/customer-tools/',
          tool({
            name: `moving_${index}_${channel === 'api' ? 'a' : 'p'}`,
            endpoint: ORIGINAL,
            headers: { Authorization: 'Bearer tenant-secret' },
          }),
        );
        expect(created.status).toBe(201);
        const id = CustomerTool.parse(created.body).id;
        const { headers: _headers, ...fields } = tool({
          name: `moving_${index}_${channel === 'api' ? 'a' : 'p'}`,
          endpoint: move.endpoint,
        });

        let accepted: boolean;
        let namedHeaders: boolean;
        if (channel === 'api') {
          const moved = await api('PUT', `/api/customer-tools/${id}`, fields);
          accepted = moved.status === 200;
          const error = ErrorBody.safeParse(moved.body);
          namedHeaders = moved.status === 400 && error.success && error.data.detail.startsWith('headers: ');
          outcomes.add(`api ${moved.status}`);
        } else {
          const saved = await session.edit(id, {
            name: fields.name ?? '',
            description: fields.description ?? '',
            endpoint: move.endpoint,
            method: 'POST',
            input_schema: JSON.stringify(fields.input_schema),
            headers: '',
            timeout_ms: '10000',
            products: ['news'],
            enabled: 'on',
          });
          accepted = saved.status === 303;
          namedHeaders = saved.status === 200 && saved.problems.some((problem) => problem.startsWith('headers: '));
          outcomes.add(`form ${accepted ? 'saved' : 'asked for headers'}`);
        }

        const after = CustomerTool.parse((await api('GET', `/api/customer-tools/${id}`)).body);
        const movedAway = new URL(after.endpoint).origin !== new URL(ORIGINAL).origin;
        if (movedAway && after.header_names.length > 0) leaks += 1;
        const expected =
          move.origin === 'same'
            ? accepted && after.header_names.length === 1
            : !accepted && namedHeaders && after.endpoint === ORIGINAL && after.header_names.length === 1;
        if (!expected)
          problems.push(
            `${move.kind} (${move.endpoint}) through the ${channel}: accepted ${accepted}, named headers ${namedHeaders}, now ${after.endpoint} with ${JSON.stringify(after.header_names)}`,
          );
        await api('DELETE', `/api/customer-tools/${id}`);
      }
    }

    report(
      'origin-change',
      `${moves.length} endpoint moves × API and portal form: ${cells} cells, ${leaks} leaks; outcomes ${outcomes.toString()}`,
      {
        cells,
        leaks,
        moves: moves.map(({ endpoint, origin, kind }) => ({ endpoint, origin, kind })),
        outcomes: outcomes.toJSON(),
      },
    );
    expect(problems).toEqual([]);
    expect(leaks).toBe(0);
  }, 120_000);
});
