import NodeEnvironment from 'jest-environment-node';

/**
 * The Jest environment of every test file. Teardown runs after the file's own afterAll hooks, so whatever
 * the file opened and did not close (an HTTP server, a pg pool's sockets, a Kafka consumer's connections,
 * a child process) is still among the process's active handles here; finding one fails the file.
 *
 * The comparison is against the handles that existed when the file started (Jest's own IPC channel,
 * stdio), and waits briefly because sockets finish closing on a later tick than `end()` returns.
 */
const WATCHED = new Set([
  'TCPSocketWrap',
  'TCPServerWrap',
  'TCPWRAP',
  'TCPSERVERWRAP',
  'PipeWrap',
  'PIPEWRAP',
  'ProcessWrap',
  'PROCESSWRAP',
  'UDPWRAP',
]);
const GRACE_MS = 3_000;

export function openHandles(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const name of process.getActiveResourcesInfo()) {
    if (WATCHED.has(name)) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

export function leakedSince(baseline: Map<string, number>): string[] {
  const leaks: string[] = [];
  for (const [name, count] of openHandles()) {
    const extra = count - (baseline.get(name) ?? 0);
    if (extra > 0) leaks.push(`${extra} × ${name}`);
  }
  return leaks;
}

export async function waitForNoLeaks(baseline: Map<string, number>, graceMs = GRACE_MS): Promise<string[]> {
  const deadline = Date.now() + graceMs;
  let leaks = leakedSince(baseline);
  while (leaks.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    leaks = leakedSince(baseline);
  }
  return leaks;
}

export default class LeakCheckingEnvironment extends NodeEnvironment {
  private baseline = new Map<string, number>();

  override async setup(): Promise<void> {
    await super.setup();
    // stdout/stderr open their pipes lazily, on first use; open them now so a test's first log line is not
    // mistaken for a leak.
    for (const stream of [process.stdout, process.stderr]) Reflect.get(stream, 'writable');
    this.baseline = openHandles();
  }

  override async teardown(): Promise<void> {
    const leaks = await waitForNoLeaks(this.baseline);
    await super.teardown();
    if (leaks.length > 0 && process.env.FIN_ALLOW_LEAKS !== '1') {
      throw new Error(
        `The test file left open: ${leaks.join(', ')}. Close every server, pool, consumer and child process in afterAll/afterEach.`,
      );
    }
  }
}
