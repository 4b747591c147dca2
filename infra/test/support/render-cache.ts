// Renders kept on disk and shared by every infra test file and Jest worker of a run, and by later runs: many files
// render the same overlays (and the same changed copies of them), and each render is a kustomize process.
//
// Invariant: an entry's key covers everything the render reads, so a changed input always renders anew and a cached
// render can never let a test pass that a fresh one would fail: the path and contents of every file under k8s/, the
// path and contents of every file of the changed copy (before its references are pointed back into the repository,
// which depends only on those two), the overlay's path, and the renderer (its name, which carries kubectl's
// kustomize version, its executable's path, and that file's contents or size and modification time). Renders that
// read anything else (a reference outside k8s/ and the copy, a remote resource) are not cached.
//
// Entries are the rendered objects as JSON, in node_modules/.cache/fin-k8s-renders (INFRA_RENDER_CACHE_DIR to move
// it; INFRA_RENDER_CACHE=off renders every time). Each is written to a temporary file and renamed into place, so a
// reader sees a whole entry or none; a lock file beside it makes a second worker that asks for the same render wait
// for the first instead of rendering it again. Failed renders are not kept. Entries unused for a week are deleted.
import { createHash } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './deployables';

export const K8S_ROOT = path.join(REPO_ROOT, 'k8s');

const DIR = process.env.INFRA_RENDER_CACHE_DIR ?? path.join(REPO_ROOT, 'node_modules', '.cache', 'fin-k8s-renders');
const ENABLED = process.env.INFRA_RENDER_CACHE !== 'off';
const UNUSED_FOR_MS = 7 * 24 * 3600_000;
/** A lock older than this belongs to a worker that died without removing it (a render takes seconds). */
const STALE_LOCK_MS = 5 * 60_000;

/** Whether `file` is `dir` or inside it. */
export function isWithin(dir: string, file: string): boolean {
  const relative = path.relative(dir, file);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** A hash of every file under `root`: each one's path relative to `root` and its contents, in a fixed order. */
export function treeHash(root: string): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else
        hash
          .update(`${path.relative(root, file)}\0`)
          .update(readFileSync(file))
          .update('\0');
    }
  };
  walk(root);
  return hash.digest('hex');
}

/** A kustomization entry that kustomize fetches (a URL or a git repository) rather than reads from disk. */
export const isRemote = (entry: string): boolean => /^([a-z][\w+.-]*:\/\/|git@|github\.com\/)/i.test(entry);

/** Whether a kustomization under `root` lists a remote resource or component, which no hash of files covers. */
export function readsRemote(root: string): boolean {
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((name) => path.basename(name) === 'kustomization.yaml')
    .some((name) =>
      readFileSync(path.join(root, name), 'utf8')
        .split('\n')
        .some((line) => isRemote(line.replace(/^\s*-\s*/, ''))),
    );
}

/** The identity of an executable: its path and contents (a wrapper script) or size and modification time. */
export function executableIdentity(file: string): string {
  const { size, mtimeMs } = statSync(file);
  return size <= 64 * 1024 ? `${file}:${createHash('sha256').update(readFileSync(file)).digest('hex')}` : `${file}:${size}:${mtimeMs}`;
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

function readEntry(file: string): string | undefined {
  try {
    const text = readFileSync(file, 'utf8');
    const now = new Date();
    utimesSync(file, now, now);
    return text;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function lockIsStale(lock: string): boolean {
  try {
    const pid = Number(readFileSync(lock, 'utf8'));
    if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) return true;
    if (!Number.isInteger(pid) || pid <= 0) return false; // just created, its pid not yet written
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // ENOENT: the lock went away meanwhile; ESRCH: its worker is gone.
    return ['ENOENT', 'ESRCH'].includes((error as NodeJS.ErrnoException).code ?? '');
  }
}

let pruned = false;
function pruneOnce(): void {
  if (pruned) return;
  pruned = true;
  for (const name of readdirSync(DIR)) {
    const file = path.join(DIR, name);
    try {
      if (Date.now() - statSync(file).mtimeMs > UNUSED_FOR_MS) rmSync(file, { force: true });
    } catch {
      // removed by another worker meanwhile
    }
  }
}

/**
 * The objects `produce` renders, from the cache when an entry has `keyParts`; `keyParts` must name every input of
 * the render (see the invariant above). Each call returns objects of its own, which the caller may change.
 */
export function cachedRender<T>(keyParts: string[], produce: () => T): T {
  if (!ENABLED) return produce();
  mkdirSync(DIR, { recursive: true });
  pruneOnce();
  const key = createHash('sha256').update(keyParts.join('\0')).digest('hex');
  const file = path.join(DIR, `${key}.json`);
  const lock = `${file}.lock`;
  for (;;) {
    const hit = readEntry(file);
    if (hit !== undefined) return JSON.parse(hit) as T;
    let fd: number;
    try {
      fd = openSync(lock, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (lockIsStale(lock)) rmSync(lock, { force: true });
      else sleep(50);
      continue;
    }
    try {
      writeSync(fd, String(process.pid));
      // The worker that held the lock before may have written the entry between our read and our lock.
      const written = readEntry(file);
      if (written !== undefined) return JSON.parse(written) as T;
      const objects = produce();
      const text = JSON.stringify(objects);
      const temporary = `${file}.${process.pid}.tmp`;
      writeFileSync(temporary, text);
      renameSync(temporary, file);
      return JSON.parse(text) as T;
    } finally {
      closeSync(fd);
      rmSync(lock, { force: true });
    }
  }
}
