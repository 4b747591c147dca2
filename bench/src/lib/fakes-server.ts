// The fakes of what the system calls outside (the Anthropic Messages API answered by the offline analyst at zero
// latency, and Finnhub over the sample data), run as a process of their own: in the benchmark runner they would
// share an event loop with the load generator, which would then slow the model down, and their CPU time would
// be counted as the load generator's. Prints one line of JSON with their URLs once they listen.
import { offlineAnalyst } from '@fin/ai';
import { startFakeAnthropic, startFakeFinnhub } from '@fin/fakes';

async function main(): Promise<void> {
  const token = process.env.BENCH_FINNHUB_TOKEN;
  if (token === undefined || token === '') throw new Error('BENCH_FINNHUB_TOKEN is required');
  const [anthropic, finnhub] = await Promise.all([
    startFakeAnthropic({ handler: offlineAnalyst(), recordRequests: false }),
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
