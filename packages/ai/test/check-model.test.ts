import { errorReply, outputSchema, startFakeAnthropic, systemText, type FakeAnthropic } from '@fin/fakes';
import { offlineAnalyst } from '@fin/offline';
import { checkModel, STAND_IN_NOTICE } from '../src/check-model';

const SHAPES = ['news', 'stock report', 'analysis markdown', 'analysis json_schema', 'chat with tools', 'repair json_schema'];

async function run(env: NodeJS.ProcessEnv): Promise<{ status: number; lines: string[] }> {
  const lines: string[] = [];
  const status = await checkModel(env, (line) => lines.push(...line.split('\n')));
  return { status, lines };
}

function lineOf(lines: string[], shape: string): string {
  const line = lines.find((candidate) => candidate.startsWith(`${shape} `));
  if (line === undefined) throw new Error(`no line for ${shape} in:\n${lines.join('\n')}`);
  return line;
}

describe('npm run check:model', () => {
  let fake: FakeAnthropic;
  const analyst = offlineAnalyst();

  beforeAll(async () => {
    fake = await startFakeAnthropic();
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.reset();
    fake.setHandler((request, context) => analyst(request, context));
  });

  const online = () => ({ ANTHROPIC_API_KEY: 'sk-ant-check-model-1234', ANTHROPIC_BASE_URL: fake.url, AI_MAX_RETRIES: '0' });

  it('sends every shape to the configured models and reports each one ok, with tokens and cost', async () => {
    const { status, lines } = await run(online());
    expect(status).toBe(0);
    for (const shape of SHAPES) {
      const line = lineOf(lines, shape);
      expect(line).toMatch(/ ok( \(.*\))?$/);
      expect(line).toContain(shape === 'news' ? 'claude-haiku-5-5' : 'claude-sonnet-5-5');
      expect(line).toMatch(/input [\d,]+, cache write [\d,]+, cache read [\d,]+, output [1-9][\d,]* {2}\$0\.\d{5}/);
    }
    expect(lineOf(lines, 'stock report')).toContain('off → thinking between_tools');
    expect(lines.join('\n')).not.toContain(STAND_IN_NOTICE);
    expect(lines.at(-1)).toMatch(/^all 6 requests passed/);
    // The repair call is the conversation of structured.ts: a bad answer, then the repair turn, tool_choice none.
    const repair = fake.requests.at(-1)?.body;
    expect(repair?.tool_choice).toEqual({ type: 'none' });
    expect(repair?.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    expect(JSON.stringify(repair?.messages.at(-1))).toContain('Your previous answer cannot be used: risk_score');
    expect(repair && outputSchema(repair)).toBeDefined();
  });

  it('exits 1 naming the shape, the error type and the request-id when the API refuses a request', async () => {
    fake.setHandler((request, context) => {
      const stockReport =
        Object.keys(outputSchema(request.body)?.properties ?? {}).includes('detailed_analysis') ||
        systemText(request.body).includes('equity analyst');
      return stockReport
        ? errorReply('invalid_request_error', { message: 'thinking.type: "disabled" is not supported for this model; use "between_tools"' })
        : analyst(request, context);
    });
    const { status, lines } = await run(online());
    expect(status).toBe(1);
    const line = lineOf(lines, 'stock report');
    expect(line).toMatch(
      /FAILED bad_request \(invalid_request_error, status 400, request-id req_\w+\): thinking\.type: "disabled" is not supported for this model; use "between_tools"$/,
    );
    for (const shape of SHAPES.filter((name) => name !== 'stock report')) expect(lineOf(lines, shape)).toMatch(/ ok( \(.*\))?$/);
    expect(lines.at(-1)).toMatch(/^1 of 6 requests failed \(stock report\)/);
  });

  it('without a key runs every shape against the local stand-in and says so', async () => {
    const { status, lines } = await run({});
    expect(status).toBe(0);
    expect(lines[0]).toContain(STAND_IN_NOTICE);
    expect(lines.at(-1)).toContain(STAND_IN_NOTICE);
    for (const shape of SHAPES) expect(lineOf(lines, shape)).toMatch(/ ok( \(.*\))?$/);
    expect(fake.requests).toHaveLength(0);
  });

  it('refuses a setting the model refuses with the start-up message, before sending anything', async () => {
    const { status, lines } = await run({ ...online(), AI_MODEL: 'claude-haiku-5-5', AI_STOCK_REPORT_THINKING: 'between_tools' });
    expect(status).toBe(1);
    expect(lines[0]).toBe('Invalid configuration:');
    expect(lines.join('\n')).toMatch(
      /AI_STOCK_REPORT_THINKING: Claude Haiku 5\.5 \(claude-haiku-5-5\) does not take thinking "between_tools"/,
    );
    expect(lines).toContain('The process did not start. See docs/configuration.md.');
    expect(fake.requests).toHaveLength(0);
  });
});
