// Scenario chat-stream (issue 6), on the real gateway and chat service (processes of their own), a database of the
// run's own and the fake Claude at zero latency in the fakes process:
//   (a) time to the first SSE event of a chat reply, through the gateway and straight from the chat service,
//       over many streams, one at a time and ten at a time;
//   (b) memory per open chat stream: the RSS growth of the chat service and of the gateway while 2,000 chat
//       streams are held open through the gateway (the fake model streams a few tokens of each reply and then
//       keeps it open), divided by 2,000.
// See docs/benchmarks.md (chat-stream).
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { createPool, type Pool } from '@fin/db';
import { freePort, sharedEnv } from '@fin/e2e/src/system';
import { identityKey, signIdentity } from '@fin/http';
import { createTestDatabase, openEventStream, type EventStreamClient } from '@fin/testing';
import { percentiles, type Percentiles } from '../lib/load';
import { describeMachine } from '../lib/machine';
import type { BenchOptions } from '../lib/options';
import { fixed, note, print, table, thousands } from '../lib/output';
import { type Cleanup, REPO_ROOT, startNodeProcess, startService, waitUntilReady, withCleanup, type NodeProcess } from '../lib/processes';
import { admin, loadAverage, printRunHeading, startFakes } from '../lib/system';

const HELD_STREAMS = 2_000;
/** Streams timed at each level of open streams (at most; fewer with --streams). */
const LOADED_STREAMS = 200;
const TARGET_KB_PER_STREAM = 20;
/** Streams per key: the streams are spread over a few keys (the account's limit covers them all together). */
const STREAMS_PER_KEY = 1_000;
/** The bench account's arranged limits: room for every held and timed stream, and for every turn they start. */
const ACCOUNT_STREAMS = 5_000;
const ACCOUNT_TURNS_PER_MINUTE = 1_000_000;
const KEYS = Math.ceil(HELD_STREAMS / STREAMS_PER_KEY);
/** Streams opened at once while building up the held streams. */
const OPENING_CONCURRENCY = 50;
const CONNECTIONS = [1, 10];
const MESSAGE = 'What is Apple trading at?';
/** bench/src/lib/fakes-server.ts holds the reply to a message containing "[hold]" open. */
const HELD_MESSAGE = '[hold] Keep this stream open.';
const FINNHUB_TOKEN = 'finnhub-bench-token';

type Target = 'direct' | 'gateway';
const TARGET_LABELS: Record<Target, string> = { direct: 'chat service, direct', gateway: 'gateway → chat service' };

interface ChatBench {
  gatewayUrl: string;
  chatUrl: string;
  gateway: NodeProcess;
  chat: NodeProcess;
  pool: Pool;
  secret: string;
  tenantId: string;
  keys: string[];
  /** A key of its own for the streams timed while others are held open (the held ones use every slot of `keys`). */
  latencyKey: string;
  /** Where memory-hook.cjs writes each service's readings. */
  memoryDir: string;
  /** The fake Messages API (the fakes process). */
  anthropicUrl: string;
}

async function startChatBench(cleanup: Cleanup): Promise<ChatBench> {
  note('creating a database, starting the fakes');
  const database = await createTestDatabase();
  cleanup.add('drop the database', () => database.drop());
  const pool = createPool({ connectionString: database.url, applicationName: 'bench', max: 2 });
  cleanup.add('close the database pool', () => pool.end());
  const { anthropicUrl, finnhubUrl } = await startFakes(cleanup);
  const env: Record<string, string> = {
    ...sharedEnv({ databaseUrl: database.url, anthropicUrl, finnhubUrl, finnhubToken: FINNHUB_TOKEN }),
  };
  const secret = env.INTERNAL_SIGNING_SECRET;
  if (secret === undefined) throw new Error('sharedEnv gave no signing secret');

  note('starting the gateway and the chat service, each a process of its own');
  const [gatewayPort, chatPort] = [await freePort(), await freePort()];
  const chatUrl = `http://127.0.0.1:${chatPort}`;
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const memoryDir = mkdtempSync(path.join(os.tmpdir(), 'bench-chat-memory-'));
  cleanup.add('remove the memory readings', () => {
    rmSync(memoryDir, { recursive: true, force: true });
    return Promise.resolve();
  });
  const memoryHook = (name: string): Record<string, string> => ({
    NODE_OPTIONS: `--require ${path.join(REPO_ROOT, 'bench/src/lib/memory-hook.cjs')}`,
    BENCH_MEMORY_FILE: path.join(memoryDir, `${name}.jsonl`),
    ...(process.env.BENCH_HEAP_SNAPSHOT ? { BENCH_HEAP_SNAPSHOT: process.env.BENCH_HEAP_SNAPSHOT } : {}),
  });
  // A short drain: replies left over at the end are interrupted at once instead of holding up the stop.
  const chat = startService('chat', 'chat', { ...env, PORT: String(chatPort), SHUTDOWN_DRAIN_TIMEOUT_MS: '2000', ...memoryHook('chat') });
  const gateway = startService('gateway', 'gateway', { ...env, PORT: String(gatewayPort), CHAT_URL: chatUrl, ...memoryHook('gateway') });
  cleanup.add('stop the services', () => Promise.all([gateway.stop(), chat.stop()]).then(() => undefined));

  await admin(database.url, ['tenants', 'create', 'bench']);
  await admin(database.url, ['limits', 'set', '--tenant', 'bench', '--product', 'chat', '--concurrent', String(ACCOUNT_STREAMS)]);
  await admin(database.url, [
    'limits',
    'set',
    '--tenant',
    'bench',
    '--product',
    'chat-turns',
    '--per-minute',
    String(ACCOUNT_TURNS_PER_MINUTE),
  ]);
  const keys: string[] = [];
  for (let n = 0; n < KEYS; n++) {
    const created = JSON.parse(
      await admin(database.url, ['keys', 'create', '--tenant', 'bench', '--scopes', 'chat', '--name', `bench ${n}`, '--json']),
    ) as { api_key: string };
    keys.push(created.api_key);
  }
  const latency = JSON.parse(
    await admin(database.url, ['keys', 'create', '--tenant', 'bench', '--scopes', 'chat', '--name', 'bench latency', '--json']),
  ) as { api_key: string };
  await Promise.all([waitUntilReady(chat, `${chatUrl}/readyz`, 90_000), waitUntilReady(gateway, `${gatewayUrl}/readyz`, 90_000)]);
  const { rows } = await pool.query<{ id: string }>("SELECT id::text FROM tenants WHERE name = 'bench'");
  return {
    gatewayUrl,
    chatUrl,
    gateway,
    chat,
    pool,
    secret,
    tenantId: rows[0]!.id,
    keys,
    latencyKey: latency.api_key,
    memoryDir,
    anthropicUrl,
  };
}

/** POST /api/chat through the gateway (with an API key) or straight to the chat service (with a signed identity). */
function openChat(bench: ChatBench, target: Target, message: string, index: number, key?: string): Promise<EventStreamClient> {
  const body = { message, conversation_id: null };
  if (target === 'gateway')
    return openEventStream(`${bench.gatewayUrl}/api/chat`, {
      body,
      headers: { 'x-api-key': key ?? bench.keys[index % bench.keys.length]! },
    });
  const caller = { tenantId: bench.tenantId, keyId: randomUUID(), scopes: ['chat'] };
  const signed = signIdentity({ requestId: randomUUID(), caller }, identityKey(bench.secret, 'chat'), {
    method: 'POST',
    path: '/api/chat',
    body: JSON.stringify(body),
  });
  return openEventStream(`${bench.chatUrl}/api/chat`, { body, headers: signed });
}

/** One streamed turn read to its end: ms from sending the request to the first event, and to `done`. */
async function timedStream(bench: ChatBench, target: Target, index: number, key?: string): Promise<{ firstMs: number; doneMs: number }> {
  const started = performance.now();
  const client = await openChat(bench, target, MESSAGE, index, key);
  if (client.status !== 200) throw new Error(`status ${client.status}: ${JSON.stringify(await client.body())}`);
  const first = await client.next();
  const firstMs = performance.now() - started;
  let last = first;
  for (let frame = first; frame !== undefined; frame = await client.next()) last = frame;
  if (last?.event !== 'done') throw new Error(`the stream ended with ${last?.event ?? 'nothing'}, not done`);
  return { firstMs, doneMs: performance.now() - started };
}

interface Latency {
  target: Target;
  connections: number;
  first: Percentiles;
  done: Percentiles;
  failures: number;
  firstFailure?: string;
}

async function measureLatency(bench: ChatBench, target: Target, connections: number, count: number, key?: string): Promise<Latency> {
  const first: number[] = [];
  const done: number[] = [];
  const outcome: Latency = { target, connections, first: percentiles([]), done: percentiles([]), failures: 0 };
  let started = 0;
  await Promise.all(
    Array.from({ length: connections }, async (_unused, worker) => {
      while (started < count) {
        started += 1;
        try {
          const timing = await timedStream(bench, target, worker, key);
          first.push(timing.firstMs);
          done.push(timing.doneMs);
        } catch (error) {
          outcome.failures += 1;
          outcome.firstFailure ??= error instanceof Error ? error.message : String(error);
        }
      }
    }),
  );
  return { ...outcome, first: percentiles(first), done: percentiles(done) };
}

async function warmUp(bench: ChatBench, seconds: number): Promise<void> {
  const until = performance.now() + seconds * 1000;
  for (let n = 0; performance.now() < until; n++) await timedStream(bench, n % 2 === 0 ? 'direct' : 'gateway', n);
}

// ------------------------------------------------------------------------------------------ memory

function rssKiB(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN);
}

/** RSS once the process has settled: the median of three readings a second apart. */
async function settledRss(service: NodeProcess): Promise<number> {
  const readings: number[] = [];
  for (let n = 0; n < 3; n++) {
    await delay(1_000);
    readings.push(rssKiB(service.child.pid));
  }
  return readings.sort((a, b) => a - b)[1]!;
}

/** The service's memory right after a full garbage collection (memory-hook.cjs, on SIGUSR2), in KiB. */
async function collectedUsage(bench: ChatBench, service: NodeProcess): Promise<{ heapUsed: number; heapTotal: number; external: number }> {
  const file = path.join(bench.memoryDir, `${service.name}.jsonl`);
  const lines = () => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
  const before = lines().length;
  service.child.kill('SIGUSR2');
  const deadline = Date.now() + 120_000;
  while (lines().length === before) {
    if (Date.now() > deadline) throw new Error(`the ${service.name} did not report its memory`);
    await delay(100);
  }
  const usage = JSON.parse(lines().at(-1)!) as NodeJS.MemoryUsage;
  return { heapUsed: usage.heapUsed / 1024, heapTotal: usage.heapTotal / 1024, external: usage.external / 1024 };
}

interface Reading {
  /** RSS (KiB) in the seconds after a full garbage collection, so that readings do not differ by garbage. */
  rss: number;
  /** JS heap in use (KiB) right after that collection. */
  heapUsed: number;
  /** The heap V8 holds (KiB): in use plus free space in its pages. */
  heapTotal: number;
  /** Memory outside the JS heap that JS objects own (KiB): Buffers and other array buffers. */
  external: number;
}

async function reading(bench: ChatBench, service: NodeProcess): Promise<Reading> {
  const usage = await collectedUsage(bench, service);
  return { rss: await settledRss(service), ...usage };
}

/** Opens `count` more chat streams through the gateway; each is live (its reply has streamed tokens) when this resolves. */
async function holdStreams(bench: ChatBench, count: number, held: EventStreamClient[]): Promise<void> {
  let next = 0;
  const offset = held.length;
  await Promise.all(
    Array.from({ length: OPENING_CONCURRENCY }, async () => {
      while (next < count) {
        const index = offset + next++;
        const client = await openChat(bench, 'gateway', HELD_MESSAGE, index);
        held.push(client);
        if (client.status !== 200) throw new Error(`held stream ${index}: status ${client.status}: ${JSON.stringify(await client.body())}`);
        let frame = await client.next();
        while (frame !== undefined && frame.event !== 'token') frame = await client.next();
        if (frame === undefined) throw new Error(`held stream ${index} ended before its first token`);
      }
    }),
  );
}

async function count(pool: Pool, sql: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(sql);
  return rows[0]?.n ?? 0;
}

const STREAMING_REPLIES = "SELECT count(*)::int AS n FROM messages WHERE status = 'streaming'";
const CHAT_SLOTS = 'SELECT count(*)::int AS n FROM chat_stream_slots';

type ServiceReadings = Record<'gateway' | 'chat', Reading>;

interface Memory {
  /** Readings with 0, HELD_STREAMS / 2 and HELD_STREAMS streams open, and new streams timed at each (through the gateway, one at a time). */
  readings: { streams: number; services: ServiceReadings; latency: Latency }[];
  slots: number;
  streaming: number;
  openingS: number;
  interrupted: number;
}

async function readBoth(bench: ChatBench): Promise<ServiceReadings> {
  return { gateway: await reading(bench, bench.gateway), chat: await reading(bench, bench.chat) };
}

/** `loadedStreams` 0: no streams are timed at each level (--memory-only). */
async function measureMemory(bench: ChatBench, loadedStreams: number): Promise<Memory> {
  note(
    `memory: baseline of the gateway and the chat service, then ${thousands(HELD_STREAMS / 2)} and ${thousands(HELD_STREAMS)} streams held open through the gateway`,
  );
  // At each level, after the memory reading: new streams timed one at a time while the others stay open.
  const timed = async (open: number): Promise<Latency> => {
    if (loadedStreams === 0) return { target: 'gateway', connections: 1, first: percentiles([]), done: percentiles([]), failures: 0 };
    note(
      `time to first event with ${thousands(open)} streams open: ${thousands(loadedStreams)} streams through the gateway, one at a time`,
    );
    return measureLatency(bench, 'gateway', 1, loadedStreams, bench.latencyKey);
  };
  const readings: Memory['readings'] = [];
  readings.push({ streams: 0, services: await readBoth(bench), latency: await timed(0) });
  const held: EventStreamClient[] = [];
  let openingMs = 0;
  try {
    for (const target of [HELD_STREAMS / 2, HELD_STREAMS]) {
      const opening = performance.now();
      await holdStreams(bench, target - held.length, held);
      openingMs += performance.now() - opening;
      const services = await readBoth(bench);
      readings.push({ streams: held.length, services, latency: await timed(held.length) });
    }
    // What each side counts while they are open: the gateway's chat slots, the chat service's replies in progress.
    const [slots, streaming] = [await count(bench.pool, CHAT_SLOTS), await count(bench.pool, STREAMING_REPLIES)];
    for (const client of held) client.close();
    note('memory: streams closed; waiting for the chat service to record every reply as interrupted');
    const deadline = Date.now() + 60_000;
    for (;;) {
      const [replies, slotsLeft] = [await count(bench.pool, STREAMING_REPLIES), await count(bench.pool, CHAT_SLOTS)];
      if (replies === 0 && slotsLeft === 0) break;
      if (Date.now() > deadline)
        throw new Error(
          `a minute after their clients left, ${replies} replies were still streaming and ${slotsLeft} chat slots still held`,
        );
      await delay(250);
    }
    const interrupted = await count(bench.pool, "SELECT count(*)::int AS n FROM messages WHERE status = 'interrupted'");
    return { readings, slots, streaming, openingS: openingMs / 1000, interrupted };
  } finally {
    for (const client of held) client.close();
  }
}

/** One variant of sdk-memory.ts: memory per open model stream at one layer of a model call, in a process of its own. */
interface SdkMemory {
  variant: string;
  streams: number;
  heapUsedKB: number;
  heapTotalKB: number;
  externalKB: number;
  rssKB: number;
}

/** The layers sdk-memory.ts measures, each in a process of its own (BENCH_SDK_VARIANT). */
const SDK_VARIANTS = ['message-stream-undici', 'message-stream', 'event-stream', 'transport', 'engine-chat'] as const;

/** --breakdown: what an open model stream costs by itself, layer by layer (sdk-memory.ts). */
async function measureSdkMemory(bench: ChatBench, cleanup: Cleanup): Promise<SdkMemory[]> {
  note(
    `breakdown: ${thousands(HELD_STREAMS / 2)} model streams held open at each layer of a model call: SDK, transport, engine (a process of its own for each)`,
  );
  const results: SdkMemory[] = [];
  for (const variant of SDK_VARIANTS) {
    const probe = startNodeProcess({
      name: `sdk-memory-${variant}`,
      entry: 'bench/dist/chat-stream/sdk-memory.js',
      env: { BENCH_ANTHROPIC_URL: bench.anthropicUrl, BENCH_STREAMS: String(HELD_STREAMS / 2), BENCH_SDK_VARIANT: variant },
      nodeFlags: ['--expose-gc'],
    });
    cleanup.add(`stop the SDK memory probe (${variant})`, () => probe.stop());
    await new Promise<void>((resolve) => {
      if (probe.child.exitCode !== null) resolve();
      else probe.child.once('exit', () => resolve());
    });
    if (probe.child.exitCode !== 0) throw new Error(`the SDK memory probe (${variant}) failed:\n${probe.output()}`);
    results.push(
      ...probe
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{"variant"'))
        .map((line) => JSON.parse(line) as SdkMemory)
        .filter((entry) => entry.variant !== 'warm-up'),
    );
  }
  return results;
}

/** The floor: a bare Node server, and a bare proxy, holding streams (floor.ts), read like the services. */
interface FloorMemory {
  role: 'server' | 'proxy';
  readings: { streams: number; reading: Reading }[];
}

const FLOOR_LABELS: Record<FloorMemory['role'], string> = {
  server: 'bare node:http server holding event streams',
  proxy: 'bare proxy: node:http server + undici Pool, piping event streams',
};

async function measureFloor(bench: ChatBench, cleanup: Cleanup): Promise<FloorMemory[]> {
  // The upstream of the bare proxy: event streams held open by the runner itself.
  const upstream = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('retry: 1000\n\nevent: token\ndata: {"content":"held"}\n\n');
  });
  upstream.keepAliveTimeout = 600_000;
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  cleanup.add('close the floor upstream', async () => {
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
  });
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const results: FloorMemory[] = [];
  for (const role of ['server', 'proxy'] as const) {
    note(`breakdown: the floor, ${FLOOR_LABELS[role]}: ${thousands(HELD_STREAMS / 2)} and ${thousands(HELD_STREAMS)} streams`);
    const port = await freePort();
    const name = `floor-${role}`;
    const probe = startNodeProcess({
      name,
      entry: 'bench/dist/chat-stream/floor.js',
      env: {
        BENCH_ROLE: role,
        PORT: String(port),
        BENCH_UPSTREAM_URL: upstreamUrl,
        NODE_OPTIONS: `--require ${path.join(REPO_ROOT, 'bench/src/lib/memory-hook.cjs')}`,
        BENCH_MEMORY_FILE: path.join(bench.memoryDir, `${name}.jsonl`),
      },
    });
    cleanup.add(`stop the ${name} probe`, () => probe.stop());
    const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
    const held: http.IncomingMessage[] = [];
    try {
      await waitForPort(probe, port);
      const open = async (count: number) => {
        let next = 0;
        await Promise.all(
          Array.from({ length: OPENING_CONCURRENCY }, async () => {
            while (next++ < count) {
              const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
                http.get({ host: '127.0.0.1', port, path: '/', agent }, resolve).on('error', reject);
              });
              held.push(response);
              await new Promise((resolve) => response.once('data', resolve));
            }
          }),
        );
      };
      const readings: FloorMemory['readings'] = [{ streams: 0, reading: await reading(bench, probe) }];
      for (const target of [HELD_STREAMS / 2, HELD_STREAMS]) {
        await open(target - held.length);
        readings.push({ streams: held.length, reading: await reading(bench, probe) });
      }
      results.push({ role, readings });
    } finally {
      for (const response of held) response.destroy();
      agent.destroy();
      await probe.stop();
    }
  }
  return results;
}

/** Waits until the process listens on `port` (a TCP connection that opens no stream). */
async function waitForPort(proc: NodeProcess, port: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (proc.child.exitCode !== null || Date.now() > deadline) throw new Error(`${proc.name} did not listen on ${port}:\n${proc.output()}`);
    await delay(100);
  }
}

// ------------------------------------------------------------------------------------------ run

interface Outcome {
  latency: Latency[];
  memory?: Memory;
  sdk?: SdkMemory[];
  floor?: FloorMemory[];
  problems: string[];
}

export async function chatStream(options: BenchOptions, command: string): Promise<boolean> {
  const machine = describeMachine();
  const started = performance.now();
  const streams = options.streams ?? (options.quick ? 200 : 1_000);
  const outcome = await withCleanup(async (cleanup): Promise<Outcome> => {
    const bench = await startChatBench(cleanup);
    const result: Outcome = { latency: [], problems: [] };
    if (!options.memoryOnly) {
      note(`time to first event: ${options.warmupS} s warm-up, then ${thousands(streams)} streams per measurement`);
      await warmUp(bench, options.warmupS);
      for (const connections of CONNECTIONS) {
        for (const target of ['direct', 'gateway'] as const) {
          note(`time to first event: ${TARGET_LABELS[target]}, ${connections} at a time`);
          const latency = await measureLatency(bench, target, connections, streams);
          if (latency.failures > 0)
            result.problems.push(
              `${TARGET_LABELS[target]}, ${connections} at a time: ${latency.failures} failed (${latency.firstFailure})`,
            );
          result.latency.push(latency);
        }
      }
    }
    result.memory = await measureMemory(bench, options.memoryOnly ? 0 : Math.min(streams, LOADED_STREAMS));
    for (const { streams: open, latency } of result.memory.readings) {
      if (latency.failures > 0)
        result.problems.push(`with ${open} streams open: ${latency.failures} timed streams failed (${latency.firstFailure})`);
    }
    if (result.memory.slots !== HELD_STREAMS)
      result.problems.push(`the gateway counted ${result.memory.slots} chat slots for ${HELD_STREAMS} open streams`);
    if (result.memory.streaming !== HELD_STREAMS)
      result.problems.push(`the chat service had ${result.memory.streaming} replies in progress for ${HELD_STREAMS} open streams`);
    for (const service of [bench.gateway, bench.chat]) {
      if (service.child.exitCode !== null || service.child.signalCode !== null)
        result.problems.push(`the ${service.name} exited:\n${service.output().slice(-2000)}`);
    }
    if (options.breakdown) {
      result.sdk = await measureSdkMemory(bench, cleanup);
      result.floor = await measureFloor(bench, cleanup);
    }
    return result;
  });

  printRunHeading('chat-stream', command, machine, started, loadAverage());
  print(`fake Claude at zero latency; each streamed turn is "${MESSAGE}": a market_data tool round, then the answer (about 20 events)`);
  report(outcome, streams);
  if (outcome.sdk !== undefined) reportSdk(outcome.sdk);
  if (outcome.floor !== undefined) reportFloor(outcome.floor);
  if (outcome.problems.length > 0) {
    print();
    print(`FAILED: the figures are not valid: ${outcome.problems.join('; ')}`);
    return false;
  }
  return true;
}

const ms = (value: number) => fixed(value, 2);
const mib = (kib: number) => fixed(kib / 1024, 1);

function reportFloor(floor: readonly FloorMemory[]): void {
  print();
  print('### Breakdown: the floor, what a Node 24 process holds per open event stream with nothing else in it (--breakdown)');
  print();
  print(
    table(
      ['process', 'RSS growth / 2,000, KB', 'marginal 1,000→2,000, KB', 'JS heap after GC, KB', 'buffers (external), KB'],
      floor.flatMap(({ role, readings }) => {
        const [idle, half, full] = readings;
        if (idle === undefined || half === undefined || full === undefined) return [];
        const per = (kib: number, streams: number) => fixed((kib * 1024) / streams / 1000, 1);
        return [
          [
            FLOOR_LABELS[role],
            per(full.reading.rss - idle.reading.rss, full.streams),
            per(full.reading.rss - half.reading.rss, full.streams - half.streams),
            per(full.reading.heapUsed - idle.reading.heapUsed, full.streams),
            per(full.reading.external - idle.reading.external, full.streams),
          ],
        ];
      }),
    ),
  );
}

function reportSdk(sdk: readonly SdkMemory[]): void {
  print();
  print('### Breakdown: memory per open model stream, by layer (--breakdown; a process of its own, no HTTP server)');
  print();
  print(
    table(
      ['variant', 'streams', 'JS heap after GC, KB', 'V8 heap held, KB', 'buffers (external), KB', 'RSS, KB'],
      sdk.map((entry) => [
        entry.variant,
        thousands(entry.streams),
        fixed(entry.heapUsedKB, 1),
        fixed(entry.heapTotalKB, 1),
        fixed(entry.externalKB, 1),
        fixed(entry.rssKB, 1),
      ]),
    ),
  );
}

function report(outcome: Outcome, streams: number): void {
  if (outcome.latency.length > 0) reportLatency(outcome.latency, streams);
  if (outcome.memory !== undefined) reportMemory(outcome.memory);
}

function reportLatency(latency: readonly Latency[], streams: number): void {
  print();
  print(`### Time to first SSE event (ms), ${thousands(streams)} streams per row`);
  print();
  print(
    table(
      ['target', 'at a time', 'p50', 'p90', 'p99', 'max', 'to done p50', 'to done p99', 'failed'],
      latency.map(({ target, connections, first, done, failures }) => [
        TARGET_LABELS[target],
        String(connections),
        ms(first.p50),
        ms(first.p90),
        ms(first.p99),
        ms(first.max),
        ms(done.p50),
        ms(done.p99),
        String(failures),
      ]),
    ),
  );
  print();
  for (const connections of CONNECTIONS) {
    const direct = latency.find((row) => row.target === 'direct' && row.connections === connections);
    const gateway = latency.find((row) => row.target === 'gateway' && row.connections === connections);
    if (direct === undefined || gateway === undefined) continue;
    print(
      `added by the gateway, ${connections} at a time: first event p50 +${ms(gateway.first.p50 - direct.first.p50)} ms, p99 +${ms(gateway.first.p99 - direct.first.p99)} ms`,
    );
  }
}

function reportMemory(memory: Memory): void {
  const [idle, half, full] = memory.readings;
  if (idle === undefined || half === undefined || full === undefined) return;
  print();
  print(`### Memory per open chat stream: up to ${thousands(full.streams)} streams held open through the gateway`);
  print();
  const perStream = (kib: number, streams: number) => (kib * 1024) / streams / 1000;
  const rows = (['chat', 'gateway'] as const).map((service) => {
    const at = (entry: typeof idle) => entry.services[service];
    const total = perStream(at(full).rss - at(idle).rss, full.streams);
    const marginal = perStream(at(full).rss - at(half).rss, full.streams - half.streams);
    return [
      service === 'chat' ? 'chat service' : 'gateway',
      mib(at(idle).rss),
      mib(at(half).rss),
      mib(at(full).rss),
      fixed(total, 1),
      fixed(marginal, 1),
      fixed(perStream(at(full).heapUsed - at(idle).heapUsed, full.streams), 1),
      fixed(perStream(at(full).heapTotal - at(idle).heapTotal, full.streams), 1),
      fixed(perStream(at(full).external - at(idle).external, full.streams), 1),
      `≤ ${TARGET_KB_PER_STREAM}`,
      `${total <= TARGET_KB_PER_STREAM ? 'yes' : 'NO'} / ${marginal <= TARGET_KB_PER_STREAM ? 'yes' : 'NO'}`,
    ];
  });
  print(
    table(
      [
        'process',
        'RSS idle MiB',
        `with ${thousands(half.streams)} MiB`,
        `with ${thousands(full.streams)} MiB`,
        `RSS growth / ${thousands(full.streams)}, KB`,
        `marginal ${thousands(half.streams)}→${thousands(full.streams)}, KB`,
        'JS heap after GC, KB',
        'V8 heap held, KB',
        'buffers (external), KB',
        'target KB',
        'met (growth / marginal)',
      ],
      rows,
    ),
  );
  print();
  print(
    '(KB per stream; every reading is taken after a full garbage collection. "RSS growth" divides the whole growth by the streams, so it includes one-off costs such as V8 enlarging its young generation under load; "marginal" is the slope between the two loads; "JS heap after GC" is the heap the streams keep in use, "V8 heap held" what V8 keeps for it (free space in its pages included), "buffers" memory outside the heap owned by JS objects. The rest of RSS is native: sockets, HTTP parsers, the allocator.)',
  );
  if (process.env.BENCH_HEAP_SNAPSHOT) {
    print();
    print('(BENCH_HEAP_SNAPSHOT was set: the heap snapshots taken at each reading inflate the RSS columns; the JS heap column stands.)');
  }
  if (memory.readings.some(({ latency }) => latency.first.count > 0)) reportLatencyWhileHeld(memory);
  print();
  print(
    `opened in ${fixed(memory.openingS, 1)} s, ${OPENING_CONCURRENCY} at a time; while open the gateway held ${thousands(memory.slots)} chat slots and the chat service ${thousands(memory.streaming)} replies in progress; after the clients left, ${thousands(memory.interrupted)} replies were recorded as interrupted`,
  );
}

function reportLatencyWhileHeld(memory: Memory): void {
  print();
  print(`### Time to first event while other streams are held open (gateway → chat service, new conversations, one at a time)`);
  print();
  print(
    table(
      ['streams open', 'timed streams', 'first event p50 ms', 'p90', 'p99', 'max', 'to done p50', 'to done p99', 'failed'],
      memory.readings.map(({ streams, latency }) => [
        thousands(streams),
        thousands(latency.first.count),
        ms(latency.first.p50),
        ms(latency.first.p90),
        ms(latency.first.p99),
        ms(latency.first.max),
        ms(latency.done.p50),
        ms(latency.done.p99),
        String(latency.failures),
      ]),
    ),
  );
}
