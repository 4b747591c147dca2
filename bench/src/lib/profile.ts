// Summary of a V8 CPU profile (the .cpuprofile file `node --cpu-prof` writes on exit): self time by function
// and by where the code comes from (a package, Node itself, our sources), over a chosen time window. The services
// run their compiled output: a frame in our dist/*.js is named by the TypeScript source and line its source map
// gives (tsconfig.base.json emits the maps beside the files).
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds, on the same monotonic clock as process.hrtime() in any process of the machine. */
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface SelfTime {
  name: string;
  /** Where the code lives: a package name, `node:<module>`, `@fin/...`, or `(native)`/`(gc)`/`(program)`. */
  origin: string;
  ms: number;
  share: number;
}

export interface ProfileSummary {
  /** Milliseconds of samples in the window, idle excluded. */
  busyMs: number;
  idleMs: number;
  functions: SelfTime[];
  origins: { origin: string; ms: number; share: number }[];
  /**
   * Inclusive time of packages and our own modules: samples whose stack passes through them, so it includes
   * what they called synchronously (a socket write, a hash). Shares overlap and do not add up to 100 %.
   */
  through: { origin: string; ms: number; share: number }[];
}

/**
 * `/…/node_modules/.pnpm/pg-protocol@1.10.3/node_modules/pg-protocol/dist/parser.js` → `pg-protocol`;
 * our sources → `@fin/<package>`, or with byFile `@fin/<package>/<file below src>`.
 */
function originOf(frame: CallFrame, repoRoot: string, { byFile = false }: { byFile?: boolean } = {}): string {
  const { url, functionName } = frame;
  if (url === '') {
    if (functionName === '(garbage collector)') return '(gc)';
    if (functionName === '(program)' || functionName === '(idle)' || functionName === '(root)') return functionName;
    return '(native)';
  }
  if (url.startsWith('node:')) {
    const module = url.slice('node:'.length).replace(/^internal\//, '');
    return `node:${module.split('/')[0]}`;
  }
  const file = url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url;
  const inModules = file.lastIndexOf('/node_modules/');
  if (inModules >= 0) {
    const rest = file.slice(inModules + '/node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1] ?? ''}` : (rest[0] ?? file);
  }
  const relative = path.relative(repoRoot, file);
  const parts = relative.split(path.sep);
  if ((parts[0] === 'packages' || parts[0] === 'services') && parts[1] !== undefined) {
    return byFile && parts[2] === 'src' ? `@fin/${parts[1]}/${parts.slice(3).join('/')}` : `@fin/${parts[1]}`;
  }
  return relative.startsWith('..') ? file : relative;
}

function nameOf(frame: CallFrame, repoRoot: string): string {
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  if (frame.url === '') return name;
  const file = frame.url.startsWith('file://') ? decodeURIComponent(new URL(frame.url).pathname) : frame.url;
  const inModules = file.lastIndexOf('/node_modules/');
  const short =
    inModules >= 0
      ? file.slice(inModules + '/node_modules/'.length)
      : path.relative(repoRoot, file).startsWith('..')
        ? file
        : path.relative(repoRoot, file);
  return `${name} (${short}:${frame.lineNumber + 1})`;
}

/** The frame at its place in our TypeScript sources, when it is in compiled output of ours with a source map. */
function sourceFrame(frame: CallFrame, repoRoot: string, maps: Map<string, SourceMap | undefined>): CallFrame {
  if (frame.url === '' || frame.url.startsWith('node:')) return frame;
  const file = frame.url.startsWith('file://') ? fileURLToPath(frame.url) : frame.url;
  if (!file.endsWith('.js') || file.includes('/node_modules/') || path.relative(repoRoot, file).startsWith('..')) return frame;
  if (!maps.has(file)) {
    const mapFile = `${file}.map`;
    maps.set(
      file,
      existsSync(mapFile)
        ? new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8')) as ConstructorParameters<typeof SourceMap>[0])
        : undefined,
    );
  }
  const entry = maps.get(file)?.findEntry(frame.lineNumber, frame.columnNumber);
  if (entry === undefined || !('originalSource' in entry)) return frame;
  return {
    ...frame,
    url: path.resolve(path.dirname(file), entry.originalSource),
    lineNumber: entry.originalLine,
    columnNumber: entry.originalColumn,
  };
}

/**
 * Self time per function and per origin over the samples taken in [fromUs, toUs] (monotonic microseconds;
 * the whole profile when the window does not overlap it).
 */
export function summariseProfile(
  file: string,
  repoRoot: string,
  window?: { fromUs: number; toUs: number },
): ProfileSummary & { windowed: boolean } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const maps = new Map<string, SourceMap | undefined>();
  for (const node of profile.nodes) node.callFrame = sourceFrame(node.callFrame, repoRoot, maps);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  const overlaps = window !== undefined && window.fromUs < profile.endTime && window.toUs > profile.startTime;
  let time = profile.startTime;
  for (let index = 0; index < profile.samples.length; index++) {
    const delta = profile.timeDeltas[index] ?? 0;
    time += delta;
    if (overlaps && (time < window.fromUs || time > window.toUs)) continue;
    // The delta before a sample is the time since the previous one: attribute it to this sample's node.
    const id = profile.samples[index] as number;
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
  }

  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const throughUs = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const frame = byId.get(at)?.callFrame;
      if (frame === undefined) break;
      const origin = originOf(frame, repoRoot, { byFile: true });
      if (origin === '(idle)') break;
      if (!origin.startsWith('(') && !origin.startsWith('node:')) seen.add(origin);
    }
    for (const origin of seen) throughUs.set(origin, (throughUs.get(origin) ?? 0) + us);
  }

  const functions = new Map<string, { name: string; origin: string; us: number }>();
  const origins = new Map<string, number>();
  let busyUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (node === undefined) continue;
    const origin = originOf(node.callFrame, repoRoot);
    if (origin === '(idle)') {
      idleUs += us;
      continue;
    }
    busyUs += us;
    const name = nameOf(node.callFrame, repoRoot);
    const entry = functions.get(name) ?? { name, origin, us: 0 };
    entry.us += us;
    functions.set(name, entry);
    origins.set(origin, (origins.get(origin) ?? 0) + us);
  }
  const share = (us: number) => (busyUs > 0 ? us / busyUs : 0);
  return {
    windowed: overlaps,
    busyMs: busyUs / 1000,
    idleMs: idleUs / 1000,
    functions: [...functions.values()]
      .sort((a, b) => b.us - a.us)
      .map(({ name, origin, us }) => ({ name, origin, ms: us / 1000, share: share(us) })),
    origins: [...origins.entries()].sort((a, b) => b[1] - a[1]).map(([origin, us]) => ({ origin, ms: us / 1000, share: share(us) })),
    through: [...throughUs.entries()].sort((a, b) => b[1] - a[1]).map(([origin, us]) => ({ origin, ms: us / 1000, share: share(us) })),
  };
}
