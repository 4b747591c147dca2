import { compileInputSchema, inputSchemaProblems, isAllowedAddress } from '../src';

describe('tool input schemas are real JSON Schemas', () => {
  it('accepts a draft 2020-12 object schema with local references', () => {
    expect(
      inputSchemaProblems({
        type: 'object',
        $defs: { account: { type: 'string', pattern: '^A-\\d+$' } },
        properties: { account: { $ref: '#/$defs/account' }, limit: { type: 'integer', minimum: 1 } },
        required: ['account'],
        additionalProperties: false,
      }),
    ).toEqual([]);
  });

  it('names the path of every problem inside input_schema', () => {
    expect(inputSchemaProblems({ type: 'object', properties: { age: { type: 'integr' }, tags: { type: 'array', items: 3 } } })).toEqual(
      expect.arrayContaining([expect.stringMatching(/^input_schema\.properties\.age\.type: /), expect.stringMatching(/^input_schema\.properties\.tags\.items: /)]),
    );
    expect(inputSchemaProblems({ type: 'object', required: 'account' })).toEqual([expect.stringMatching(/^input_schema\.required: must be array/)]);
  });

  it('refuses references it would have to fetch, and other drafts', () => {
    expect(inputSchemaProblems({ type: 'object', properties: { a: { $ref: 'https://169.254.169.254/schema.json' } } })).toEqual([
      expect.stringMatching(/^input_schema: \$ref .* cannot be resolved/),
    ]);
    expect(inputSchemaProblems({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' })).toEqual([expect.stringMatching(/only JSON Schema draft 2020-12/)]);
  });

  it('validates arguments against the compiled schema', () => {
    const validate = compileInputSchema({ type: 'object', properties: { account: { type: 'string' } }, required: ['account'], additionalProperties: false });
    expect(validate({ account: 'A-1' })).toEqual([]);
    expect(validate({ account: 7, extra: true })).toEqual(expect.arrayContaining(['arguments.account: must be string', 'arguments: must NOT have additional properties']));
  });

  it('lets two tenants use the same $id', () => {
    const schema = { $id: 'https://example.com/args', type: 'object' };
    expect(inputSchemaProblems(schema)).toEqual([]);
    expect(inputSchemaProblems({ ...schema, properties: { a: { type: 'string' } } })).toEqual([]);
  });
});

describe('public addresses', () => {
  it.each(['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e'])('allows %s', (address) => {
    expect(isAllowedAddress(address)).toBe(true);
  });

  it.each(['127.0.0.1', '0.0.0.0', '10.1.2.3', '169.254.169.254', '100.100.100.200', '::1', '::', '::ffff:8.8.8.8', '64:ff9b::808:808', '64:ff9b:1::1', 'fd00:ec2::254', 'fe80::1%eth0', 'not-an-ip'])(
    'refuses %s',
    (address) => {
      expect(isAllowedAddress(address)).toBe(false);
    },
  );

  it('the loopback switch allows 127.0.0.0/8 and ::1 and nothing else', () => {
    expect(isAllowedAddress('127.0.0.2', { allowLoopback: true })).toBe(true);
    expect(isAllowedAddress('[::1]', { allowLoopback: true })).toBe(true);
    for (const address of ['10.0.0.1', '192.168.0.1', '169.254.169.254', '::ffff:127.0.0.1', 'fd00::1', '0.0.0.0']) {
      expect(isAllowedAddress(address, { allowLoopback: true })).toBe(false);
    }
  });
});
