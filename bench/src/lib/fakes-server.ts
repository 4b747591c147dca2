// The fakes of what the system calls outside (the Anthropic Messages API answered by the offline analyst at zero
// latency, and Finnhub over the sample data), run as a process of their own: in the benchmark runner they would
// share an event loop with the load generator, which would then slow the model down, and their CPU time would
// be counted as the load generator's. Prints one line of JSON with their URLs once they listen.
//
// A message that contains HOLD_MARKER is answered with a reply that streams a few events and then stays open
// until the client goes away: the chat-stream scenario holds thousands of streams open with it.
//
// The capacity scenario turns on the stand-in's pace and the organisation's limits (BENCH_FAKE_PACE=true,
// BENCH_FAKE_RATE_LIMITS as JSON RateLimitOptions, BENCH_FAKE_TIME_SCALE), and reads what the fake admitted from
// `statsUrl` (GET: model calls answered and the max_tokens they reserved, per model, and the 429s sent).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { offlineAnalyst } from '@fin/ai';
import { lastUserText, startFakeAnthropic, startFakeFinnhub, textReply, type FakeAnthropicOptions, type ReplyHandler } from '@fin/fakes';

const HOLD_MARKER = '[hold]';

function holdOr(handler: ReplyHandler): ReplyHandler {
  // message_start, content_block_start and two text deltas, then nothing: a reply the model is still writing.
  const held = textReply('This stream is held open by the benchmark until the client leaves.', { faults: { hang: { afterEvents: 4 } } });
  return (request, context) => (lastUserText(request.body).includes(HOLD_MARKER) ? held : handler(request, context));
}

/** Model calls the fake answered (admitted by the limits), per model: how many, and the max_tokens they reserved. */
interface FakeStats {
  calls: Record<string, { calls: number; maxTokens: number }>;
  rateLimited: number;
}

function counted(handler: ReplyHandler, stats: FakeStats): ReplyHandler {
  return (request, context) => {
    const entry = (stats.calls[request.body.model] ??= { calls: 0, maxTokens: 0 });
    entry.calls++;
    entry.maxTokens += request.body.max_tokens;
    return handler(request, context);
  };
}

/** Pace, limits and time scale from the environment (all off unless set). */
function paceAndLimits(env: NodeJS.ProcessEnv): Pick<FakeAnthropicOptions, 'pace' | 'rateLimits' | 'timeScale'> {
  const options: Pick<FakeAnthropicOptions, 'pace' | 'rateLimits' | 'timeScale'> = {};
  if (env.BENCH_FAKE_PACE === 'true') options.pace = true;
  if (env.BENCH_FAKE_RATE_LIMITS) options.rateLimits = JSON.parse(env.BENCH_FAKE_RATE_LIMITS) as FakeAnthropicOptions['rateLimits'];
  if (env.BENCH_FAKE_TIME_SCALE) options.timeScale = Number(env.BENCH_FAKE_TIME_SCALE);
  return options;
}

async function main(): Promise<void> {
  const token = process.env.BENCH_FINNHUB_TOKEN;
  if (token === undefined || token === '') throw new Error('BENCH_FINNHUB_TOKEN is required');
  const stats: FakeStats = { calls: {}, rateLimited: 0 };
  const [anthropic, finnhub] = await Promise.all([
    startFakeAnthropic({ handler: counted(holdOr(offlineAnalyst()), stats), recordRequests: false, ...paceAndLimits(process.env) }),
    startFakeFinnhub({ token }),
  ]);
  const statsServer = http.createServer((_req, res) => {
    stats.rateLimited = anthropic.rateLimited;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
  });
  await new Promise<void>((resolve) => statsServer.listen(0, '127.0.0.1', resolve));
  const statsUrl = `http://127.0.0.1:${(statsServer.address() as AddressInfo).port}`;
  // The fake Finnhub keeps every request it served; a long run would grow it without bound.
  setInterval(() => finnhub.reset(), 10_000).unref();
  const stop = () => {
    statsServer.close();
    void Promise.allSettled([anthropic.close(), finnhub.close()]).then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdout.write(`${JSON.stringify({ anthropicUrl: anthropic.url, finnhubUrl: finnhub.apiBaseUrl, statsUrl })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`fakes failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
