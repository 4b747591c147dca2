import { type ChildProcessByStdio, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { type Readable } from 'node:stream';
import { uniqueName, waitFor } from '@fin/testing';
import { type EnvelopeOf, createPublisher, type Subscription } from '../src';
import { type BusHarness, makeKafkaBus, testTopic } from './helpers';

interface Report {
  event: 'subscribed' | 'handled' | 'crashing' | 'error';
  id?: string;
  message?: string;
}

/** Runs the crashing consumer fixture in a child process, collecting what it reports. */
function startChild(topic: string, groupId: string) {
  const child: ChildProcessByStdio<null, Readable, Readable> = spawn(
    process.execPath,
    ['--conditions=development', '--import', 'tsx', path.join(__dirname, 'fixtures/crashing-consumer.ts')],
    { cwd: path.join(__dirname, '..'), env: { ...process.env, TOPIC: topic, GROUP_ID: groupId }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const reports: Report[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => reports.push(JSON.parse(line) as Report));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on('close', (code, signal) => resolve(signal ?? code)));
  const find = (event: Report['event']) => {
    const failure = reports.find((report) => report.event === 'error');
    if (failure) throw new Error(`The child consumer failed: ${failure.message}\n${stderr}`);
    return reports.find((report) => report.event === event);
  };
  return { child, reports, exited, find };
}

describe('a consumer that dies before committing', () => {
  let harness: BusHarness;
  let child: ReturnType<typeof startChild> | undefined;
  let subscription: Subscription | undefined;

  beforeAll(async () => {
    harness = await makeKafkaBus();
  });
  afterAll(async () => {
    if (child && child.child.exitCode === null && child.child.signalCode === null) {
      child.child.kill('SIGKILL');
      await child.exited;
    }
    await subscription?.stop();
    await harness.close();
  });

  it('has its uncommitted message redelivered to the next consumer of its group', async () => {
    const topic = testTopic('crash');
    await harness.createTopics([topic]);
    const groupId = uniqueName('crash-group');
    const publisher = createPublisher(harness.bus);
    const first = await publisher.publish(topic, 'job-1', { seq: 1, label: 'fine' });
    const crashing = await publisher.publish(topic, 'job-1', { seq: 2, label: 'crash' });

    child = startChild(topic.name, groupId);
    const running = child;
    await waitFor(() => running.find('crashing'), { what: 'the child to receive the message', timeoutMs: 30_000 });
    expect(running.find('handled')?.id).toBe(first.id);
    expect(running.find('crashing')?.id).toBe(crashing.id);
    // The first message's commit is sent without waiting for the broker's answer (kafka-bus.ts), so it may
    // still be in flight here; the crashing message's offset is never committed while its handler runs.
    await waitFor(async () => (await harness.committed(groupId, topic.name)) === 1, {
      what: "the first message's commit",
    });
    running.child.kill('SIGKILL');
    expect(await running.exited).toBe('SIGKILL');
    // Only the message handled before the crash was committed.
    expect(await harness.committed(groupId, topic.name)).toBe(1);

    const redelivered: Array<EnvelopeOf<typeof topic>> = [];
    subscription = await harness.bus.subscribe({
      topic,
      groupId,
      handler: async (envelope) => void redelivered.push(envelope),
    });
    await waitFor(() => redelivered.length > 0, { what: 'the redelivery', timeoutMs: 30_000 });
    expect(redelivered[0]?.id).toBe(crashing.id);
    expect(redelivered[0]).toEqual(crashing);
    await waitFor(async () => (await harness.committed(groupId, topic.name)) === 2, { what: 'the commit' });
    expect(redelivered.map((envelope) => envelope.id)).toEqual([crashing.id]);
  });
});
