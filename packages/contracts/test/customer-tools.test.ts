import {
  CUSTOMER_TOOL_INPUT_SCHEMA_MAX_BYTES,
  CustomerTool,
  CustomerToolCreateRequest,
  CustomerToolListResponse,
  CustomerToolPathParams,
  CustomerToolUpdateRequest,
  FORBIDDEN_TOOL_HEADERS,
  RESERVED_TOOL_NAMES,
} from '../src';
import { UUID, ok, rejected } from './helpers';

const minimal = {
  name: 'get_positions',
  description: 'Returns the positions of an account.',
  endpoint: 'https://api.example.com/positions',
  input_schema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] },
};

const withField = (field: string, value: unknown) => ({ ...minimal, [field]: value });

describe('CustomerToolCreateRequest', () => {
  it('fills in the defaults', () => {
    expect(ok(CustomerToolCreateRequest, minimal)).toEqual({
      ...minimal,
      method: 'POST',
      enabled: true,
      timeout_ms: 10_000,
      products: ['news', 'stock-report', 'analysis', 'chat'],
    });
  });

  it('requires the model-facing fields', () => {
    expect(rejected(CustomerToolCreateRequest, {})).toBe(
      'name: is required; description: is required; endpoint: is required; input_schema: is required',
    );
  });

  it.each(['a', 'getPositions', 'get_positions_2', `a${'b'.repeat(63)}`])('accepts the name %j', (name) => {
    expect(ok(CustomerToolCreateRequest, withField('name', name)).name).toBe(name);
  });

  it.each(['', '1abc', '_x', 'get-positions', 'get positions', 'naïve', `a${'b'.repeat(64)}`])('rejects the name %j', (name) => {
    expect(rejected(CustomerToolCreateRequest, withField('name', name))).toBe(
      'name: must start with a letter and contain only letters, digits and "_" (at most 64 characters)',
    );
  });

  // Issue 34: the engine offers its own tools beside the customer's, and the Messages API refuses a request that
  // names one tool twice; every run of the account failed.
  it.each(['market_data', 'sec_filings', 'web_search'])('refuses the name of one of our own tools, %j, saying why', (name) => {
    expect(RESERVED_TOOL_NAMES).toContain(name);
    const detail = `name: "${name}" is reserved for the service's own tools: choose another name`;
    expect(rejected(CustomerToolCreateRequest, withField('name', name))).toBe(detail);
    expect(rejected(CustomerToolUpdateRequest, { ...withField('name', name), enabled: false })).toBe(detail);
  });

  it('compares reserved names exactly, as the Messages API compares tool names', () => {
    for (const name of ['Web_Search', 'MARKET_DATA', 'web_search_2', 'my_market_data']) {
      expect(ok(CustomerToolCreateRequest, withField('name', name)).name).toBe(name);
    }
  });

  it('bounds the description to 1..1024 characters', () => {
    ok(CustomerToolCreateRequest, withField('description', 'd'.repeat(1024)));
    expect(rejected(CustomerToolCreateRequest, withField('description', 'd'.repeat(1025)))).toBe(
      'description: must be at most 1024 characters',
    );
    expect(rejected(CustomerToolCreateRequest, withField('description', '  '))).toBe('description: must not be empty');
  });

  describe('endpoint', () => {
    it('accepts an https URL up to 2048 characters', () => {
      const base = 'https://api.example.com/';
      ok(CustomerToolCreateRequest, withField('endpoint', `${base}${'p'.repeat(2048 - base.length)}`));
      expect(rejected(CustomerToolCreateRequest, withField('endpoint', `${base}${'p'.repeat(2049 - base.length)}`))).toBe(
        'endpoint: must be at most 2048 characters',
      );
    });

    it.each([
      'http://api.example.com/x',
      'ftp://api.example.com/x',
      'https:api.example.com',
      '//api.example.com',
      'not a url',
      '/relative',
    ])('rejects %j', (endpoint) => {
      expect(rejected(CustomerToolCreateRequest, withField('endpoint', endpoint))).toMatch(/^endpoint: must be an absolute https:\/\/ URL/);
    });

    it('rejects credentials in the URL', () => {
      expect(rejected(CustomerToolCreateRequest, withField('endpoint', 'https://user:secret@api.example.com/x'))).toBe(
        'endpoint: must not contain a user name or password; put secrets in headers',
      );
      rejected(CustomerToolCreateRequest, withField('endpoint', 'https://token@api.example.com/x'));
    });
  });

  it('accepts GET and POST only', () => {
    expect(ok(CustomerToolCreateRequest, withField('method', 'GET')).method).toBe('GET');
    expect(rejected(CustomerToolCreateRequest, withField('method', 'PUT'))).toBe('method: must be GET or POST, got "PUT"');
  });

  describe('input_schema', () => {
    it('keeps the whole schema', () => {
      const schema = { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false };
      expect(ok(CustomerToolCreateRequest, withField('input_schema', schema)).input_schema).toEqual(schema);
    });

    it('requires an object schema at the top level', () => {
      expect(rejected(CustomerToolCreateRequest, withField('input_schema', { type: 'array' }))).toBe(
        'input_schema.type: must be "object": a tool takes its arguments as a JSON object',
      );
      expect(rejected(CustomerToolCreateRequest, withField('input_schema', { properties: {} }))).toMatch(/^input_schema\.type: /);
      expect(rejected(CustomerToolCreateRequest, withField('input_schema', []))).toBe('input_schema: must be a JSON Schema object');
    });

    it('caps the size', () => {
      const overhead = JSON.stringify({ type: 'object', description: '' }).length;
      ok(
        CustomerToolCreateRequest,
        withField('input_schema', { type: 'object', description: 'x'.repeat(CUSTOMER_TOOL_INPUT_SCHEMA_MAX_BYTES - overhead) }),
      );
      expect(
        rejected(
          CustomerToolCreateRequest,
          withField('input_schema', { type: 'object', description: 'x'.repeat(CUSTOMER_TOOL_INPUT_SCHEMA_MAX_BYTES - overhead + 1) }),
        ),
      ).toBe('input_schema: must be at most 16384 bytes (16 KiB) when serialised as JSON, got 16385 bytes');
    });
  });

  describe('headers', () => {
    it('accepts token names and printable values', () => {
      const headers = { Authorization: 'Bearer abc', 'X-Api-Key': 'k', "x!#$%&'*+-.^_`|~1": 'v' };
      expect(ok(CustomerToolCreateRequest, withField('headers', headers)).headers).toEqual(headers);
    });

    it.each(['Bad Name', 'x:y', 'x\r\ny', 'é', '(x)'])('rejects the header name %j', (name) => {
      expect(rejected(CustomerToolCreateRequest, withField('headers', { [name]: 'v' }))).toMatch(
        /: invalid name: must be 1 to 128 HTTP token characters/,
      );
    });

    it.each(['Host', 'content-length', 'Transfer-Encoding', 'CONNECTION', 'Upgrade', 'TE', 'Keep-Alive'])('forbids %s', (name) => {
      const detail = rejected(CustomerToolCreateRequest, withField('headers', { [name]: 'v' }));
      expect(detail).toMatch(/^headers(\.|\[")/);
      expect(detail.endsWith(`: invalid name: "${name}" is set by the HTTP client and cannot be configured`)).toBe(true);
      expect(FORBIDDEN_TOOL_HEADERS).toContain(name.toLowerCase());
    });

    it('rejects values with line breaks and empty values', () => {
      expect(rejected(CustomerToolCreateRequest, withField('headers', { 'X-A': 'a\r\nInjected: 1' }))).toBe(
        'headers["X-A"]: must not contain line breaks or control characters',
      );
      expect(rejected(CustomerToolCreateRequest, withField('headers', { 'X-A': '' }))).toBe('headers["X-A"]: must not be empty');
    });

    it('accepts 20 headers and rejects 21', () => {
      const headers = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`X-H${index}`, 'v']));
      ok(CustomerToolCreateRequest, withField('headers', headers(20)));
      expect(rejected(CustomerToolCreateRequest, withField('headers', headers(21)))).toBe('headers: must have at most 20 headers, got 21');
    });

    it('rejects the same name twice in different case', () => {
      expect(rejected(CustomerToolCreateRequest, withField('headers', { 'X-Key': 'a', 'x-key': 'b' }))).toBe(
        'headers["x-key"]: duplicates header "X-Key" (header names are case-insensitive)',
      );
    });
  });

  it('bounds timeout_ms to integers from 100 to 30000', () => {
    ok(CustomerToolCreateRequest, withField('timeout_ms', 100));
    ok(CustomerToolCreateRequest, withField('timeout_ms', 30_000));
    expect(rejected(CustomerToolCreateRequest, withField('timeout_ms', 99))).toBe('timeout_ms: must be at least 100');
    expect(rejected(CustomerToolCreateRequest, withField('timeout_ms', 30_001))).toBe('timeout_ms: must be at most 30000');
    expect(rejected(CustomerToolCreateRequest, withField('timeout_ms', 150.5))).toBe('timeout_ms: must be an integer');
  });

  it('takes a non-empty subset of products, ignoring repeats', () => {
    expect(ok(CustomerToolCreateRequest, withField('products', ['chat', 'news', 'chat'])).products).toEqual(['chat', 'news']);
    expect(rejected(CustomerToolCreateRequest, withField('products', []))).toBe('products: must list at least one product');
    expect(rejected(CustomerToolCreateRequest, withField('products', ['portal']))).toBe(
      'products[0]: must be one of news, stock-report, analysis, chat, got "portal"',
    );
  });

  it('rejects unknown fields such as a misspelt header map', () => {
    expect(rejected(CustomerToolCreateRequest, withField('header', {}))).toMatch(
      /^unknown field "header" \(allowed: name, description, endpoint, method, input_schema, headers, enabled, timeout_ms, products\)$/,
    );
  });
});

describe('CustomerToolUpdateRequest', () => {
  it('resets omitted fields to their defaults (full replacement)', () => {
    expect(ok(CustomerToolUpdateRequest, { ...minimal, enabled: false })).toMatchObject({
      enabled: false,
      method: 'POST',
      timeout_ms: 10_000,
    });
  });

  it('distinguishes omitted headers (keep) from {} (remove all)', () => {
    expect(ok(CustomerToolUpdateRequest, minimal)).not.toHaveProperty('headers');
    expect(ok(CustomerToolUpdateRequest, withField('headers', {})).headers).toEqual({});
  });

  it('validates like create', () => {
    rejected(CustomerToolUpdateRequest, withField('endpoint', 'http://api.example.com'));
    rejected(CustomerToolUpdateRequest, withField('headers', { Host: 'x' }));
  });
});

describe('CustomerTool responses', () => {
  const tool = {
    id: UUID,
    ...minimal,
    method: 'POST',
    header_names: ['Authorization'],
    enabled: true,
    disabled_reason: null,
    timeout_ms: 10_000,
    products: ['chat'],
    created_at: '2025-01-01T00:00:00.000Z',
    updated_at: '2025-01-02T10:00:00+02:00',
  };

  it('returns header names but never header values', () => {
    expect(Object.keys(CustomerTool.shape)).not.toContain('headers');
    expect(ok(CustomerTool, { ...tool, headers: { Authorization: 'Bearer secret' } })).not.toHaveProperty('headers');
  });

  it('lists a tool the service disabled under a name reserved after it was saved, with the reason', () => {
    const disabled = { ...tool, name: 'web_search', enabled: false, disabled_reason: 'Disabled by the service: …' };
    expect(ok(CustomerTool, disabled)).toEqual(disabled);
    rejected(CustomerTool, { ...tool, disabled_reason: undefined });
  });

  it('parses a list and requires ISO timestamps', () => {
    expect(ok(CustomerToolListResponse, { tools: [tool] })).toEqual({ tools: [tool] });
    rejected(CustomerTool, { ...tool, created_at: 'yesterday' });
  });

  it('validates the {id} path parameter', () => {
    ok(CustomerToolPathParams, { id: UUID });
    expect(rejected(CustomerToolPathParams, { id: '42' })).toBe(
      'id: must be a UUID such as 3fa85f64-5717-4562-b3fc-2c963f66afa6, got "42"',
    );
  });
});
