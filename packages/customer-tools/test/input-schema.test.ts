import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
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
      expect.arrayContaining([
        expect.stringMatching(/^input_schema\.properties\.age\.type: /),
        expect.stringMatching(/^input_schema\.properties\.tags\.items: /),
      ]),
    );
    expect(inputSchemaProblems({ type: 'object', required: 'account' })).toEqual([
      expect.stringMatching(/^input_schema\.required: must be array/),
    ]);
  });

  it('refuses references it would have to fetch, and other drafts', () => {
    expect(inputSchemaProblems({ type: 'object', properties: { a: { $ref: 'https://169.254.169.254/schema.json' } } })).toEqual([
      expect.stringMatching(/^input_schema: \$ref .* cannot be resolved/),
    ]);
    expect(inputSchemaProblems({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' })).toEqual([
      expect.stringMatching(/only JSON Schema draft 2020-12/),
    ]);
  });

  it('validates arguments against the compiled schema', () => {
    const validate = compileInputSchema({
      type: 'object',
      properties: { account: { type: 'string' } },
      required: ['account'],
      additionalProperties: false,
    });
    expect(validate({ account: 'A-1' })).toEqual([]);
    expect(validate({ account: 7, extra: true })).toEqual(
      expect.arrayContaining(['arguments.account: must be string', 'arguments: must NOT have additional properties']),
    );
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

  it.each([
    '127.0.0.1',
    '0.0.0.0',
    '10.1.2.3',
    '169.254.169.254',
    '100.100.100.200',
    '::1',
    '::',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '64:ff9b:1::1',
    'fd00:ec2::254',
    'fe80::1%eth0',
    'not-an-ip',
  ])('refuses %s', (address) => {
    expect(isAllowedAddress(address)).toBe(false);
  });

  it('the loopback switch allows 127.0.0.0/8 and ::1 and nothing else', () => {
    expect(isAllowedAddress('127.0.0.2', { allowLoopback: true })).toBe(true);
    expect(isAllowedAddress('[::1]', { allowLoopback: true })).toBe(true);
    for (const address of ['10.0.0.1', '192.168.0.1', '169.254.169.254', '::ffff:127.0.0.1', 'fd00::1', '0.0.0.0']) {
      expect(isAllowedAddress(address, { allowLoopback: true })).toBe(false);
    }
  });
});

describe('customer regular expressions run in linear time', () => {
  it.each([
    ['(a)\\1', 'input_schema.properties.code.pattern', /backreferences/],
    ['(?<x>a)\\k<x>', 'input_schema.properties.code.pattern', /backreferences/],
    ['^(?=.*\\d)\\w+$', 'input_schema.properties.code.pattern', /lookahead and lookbehind/],
    ['(?<!x)y', 'input_schema.properties.code.pattern', /lookahead and lookbehind/],
    ['(unclosed', 'input_schema.properties.code.pattern', /is not a valid regular expression/],
  ])('refuses %s at registration, naming %s', (pattern, path, reason) => {
    const problems = inputSchemaProblems({ type: 'object', properties: { code: { type: 'string', pattern } } });
    expect(problems).toEqual([expect.stringMatching(new RegExp(`^${path.replace(/\./g, '\\.')}: `))]);
    expect(problems[0]).toMatch(reason);
  });

  it('names patternProperties keys and patterns nested anywhere a subschema may be', () => {
    expect(
      inputSchemaProblems({
        type: 'object',
        patternProperties: { '^(x)\\1$': { type: 'string' } },
        $defs: { id: { type: 'array', items: { anyOf: [{ type: 'string', pattern: '(?=a)' }] } } },
        properties: { pattern: { type: 'string' } },
        // Data, not subschemas: never read as keywords.
        examples: [{ pattern: '(a)\\1' }],
      }),
    ).toEqual([
      expect.stringMatching(/^input_schema\.patternProperties\["\^\(x\)\\\\1\$"\]: backreferences/),
      expect.stringMatching(/^input_schema\.\$defs\.id\.items\.anyOf\[0\]\.pattern: lookahead/),
    ]);
  });

  it('accepts the ECMA-262 spellings RE2 can run, with the same answers', () => {
    const validate = compileInputSchema({
      type: 'object',
      properties: {
        word: { type: 'string', pattern: '^\\u00e9(?<rest>\\p{L}+)$' },
        code: { type: 'string', pattern: '^[A-Z]{2}-\\d{3}$' },
      },
      patternProperties: { '^x-': { type: 'integer' } },
    });
    expect(validate({ word: 'étude', code: 'AB-123', 'x-a': 1 })).toEqual([]);
    expect(validate({ word: 'etude', code: 'AB-12', 'x-a': 'one' })).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^arguments\.word: must match pattern/),
        expect.stringMatching(/^arguments\.code: must match pattern/),
        expect.stringMatching(/^arguments\["x-a"\]: must be integer/),
      ]),
    );
  });

  // JavaScript's backtracking engine takes minutes on 30 characters of this and never finishes on 100,000; the
  // validation runs in a child process, so a hang fails this test (killed by the guard) instead of the runner.
  it('validates a catastrophic pattern against a long input and returns', async () => {
    const script = `
      const { compileInputSchema, inputSchemaProblems } = require('./src/input-schema.ts');
      const schema = { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } };
      const problems = inputSchemaProblems(schema);
      const answer = compileInputSchema(schema)({ s: 'a'.repeat(100000) + '!' });
      process.stdout.write(JSON.stringify({ problems, answer }));`;
    const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', '-e', script], {
      cwd: path.resolve(__dirname, '..'),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const guard = setTimeout(() => child.kill('SIGKILL'), 40_000);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
    clearTimeout(guard);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(JSON.parse(out)).toEqual({ problems: [], answer: ['arguments.s: must match pattern "^(a+)+$"'] });
  }, 60_000);
});
