// The fakes of what the system calls outside (the Anthropic Messages API answered by the offline analyst at zero
// latency, and Finnhub over the sample data), run as a process of their own: in the benchmark runner they would
// share an event loop with the load generator, which would then slow the model down, and their CPU time would
// be counted as the load generator's. Prints one line of JSON with their URLs once they listen.
//
// A message that contains HOLD_MARKER is answered with a reply that streams a few events and then stays open
// until the client goes away: the chat-stream scenario holds thousands of streams open with it.
import { offlineAnalyst } from '@fin/ai';
import { lastUserText, startFakeAnthropic, startFakeFinnhub, textReply, type ReplyHandler } from '@fin/fakes';

const HOLD_MARKER = '[hold]';

function holdOr(handler: ReplyHandler): ReplyHandler {
  // message_start, content_block_start and two text deltas, then nothing: a reply the model is still writing.
  const held = textReply('This stream is held open by the benchmark until the client leaves.', { faults: { hang: { afterEvents: 4 } } });
  return (request, context) => (lastUserText(request.body).includes(HOLD_MARKER) ? held : handler(request, context));
}

async function main(): Promise<void> {
  const token = process.env.BENCH_FINNHUB_TOKEN;
  if (token === undefined || token === '') throw new Error('BENCH_FINNHUB_TOKEN is required');
  const [anthropic, finnhub] = await Promise.all([
    startFakeAnthropic({ handler: holdOr(offlineAnalyst()), recordRequests: false }),
    startFakeFinnhub({ token }),
  ]);
  // The fake Finnhub keeps every request it served; a long run would grow it without bound.
  setInterval(() => finnhub.reset(), 10_000).unref();
  const stop = () => {
    void Promise.allSettled([anthropic.close(), finnhub.close()]).then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdout.write(`${JSON.stringify({ anthropicUrl: anthropic.url, finnhubUrl: finnhub.apiBaseUrl })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`fakes failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
