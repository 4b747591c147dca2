// npm run release -- --registry <R> --tag <T>: builds the eight service images for linux/amd64 and linux/arm64 with
// `docker buildx bake` (infra/docker-bake.json), each with an SBOM and a provenance attestation, pushes them to
// <R>/<service>:<T>, prints their digests and pins them into the prod overlay (release.yaml's version, the digests
// in its `images`). docs/deployment.md, "Releases", has the options; .github/workflows/release.yml runs it on a tag.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BAKE_FILE, REPO_ROOT, bakePlan, readBakeFile } from './bake';
import { checkVersion, digestsFromMetadata, pinOverlay } from './pin';

const USAGE = `npm run release -- --registry <registry/prefix> --tag <version> [options]

  --registry R      where the images go: <R>/<service>:<tag> (registry.example.com/financial-intelligence)
  --tag T           the release's version: the images' tag, release.yaml's version, the Job migrate-<T>
  --overlay DIR     the overlay to pin (default k8s/overlays/prod)
  --pin-by digest   pin each image's digest (default); 'tag': the version is the tag, no digests (the dev overlay)
  --platforms LIST  instead of the bake file's (linux/amd64,linux/arm64), e.g. linux/amd64 for a quick build
  --commit SHA      the source revision the images report (default: git rev-parse HEAD)
  --dry-run         print the bake command and plan, build nothing, change nothing (no Docker engine needed)
  --from-metadata F pin from the metadata file of an earlier bake (--metadata-file) instead of building
  --no-pin          build, push and print the digests; leave the overlay as it is`;

function fail(message: string): never {
  process.stderr.write(`release: ${message}\n`);
  process.exit(2);
}

const { values } = (() => {
  try {
    return parseArgs({
      options: {
        registry: { type: 'string' },
        tag: { type: 'string' },
        overlay: { type: 'string', default: 'k8s/overlays/prod' },
        'pin-by': { type: 'string', default: 'digest' },
        platforms: { type: 'string' },
        commit: { type: 'string' },
        'dry-run': { type: 'boolean', default: false },
        'from-metadata': { type: 'string' },
        'no-pin': { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    });
  } catch (error) {
    return fail(`${(error as Error).message}\n\n${USAGE}`);
  }
})();

if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (values.registry === undefined || values.tag === undefined) fail(`--registry and --tag are required\n\n${USAGE}`);
if (values['pin-by'] !== 'digest' && values['pin-by'] !== 'tag') fail(`--pin-by is digest or tag, not ${values['pin-by']}`);
const registry = values.registry.replace(/\/+$/, '');
const version = (() => {
  try {
    return checkVersion(values.tag);
  } catch (error) {
    return fail((error as Error).message);
  }
})();
const overlay = path.resolve(REPO_ROOT, values.overlay);

function gitCommit(): string {
  const result = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : '';
}

const env = { ...process.env, REGISTRY: registry, TAG: version, COMMIT: values.commit ?? gitCommit() };
const bake = readBakeFile();
const targets = Object.keys(bakePlan(bake, env));

/**
 * Pushed, with `--metadata-file`, whose per-target `containerimage.digest` is what the push produced. The platforms
 * and the attestations (SBOM, provenance) are the bake file's.
 */
function bakeArgs(metadataFile: string): string[] {
  const args = ['buildx', 'bake', '--file', BAKE_FILE, '--push', '--metadata-file', metadataFile];
  if (values.platforms !== undefined) args.push('--set', `*.platform=${values.platforms}`);
  return args;
}

function pin(digests: Record<string, string>): void {
  if (values['no-pin']) return;
  try {
    pinOverlay(overlay, { registry, version, digests: values['pin-by'] === 'digest' ? digests : undefined });
  } catch (error) {
    fail(`nothing pinned: ${(error as Error).message}`);
  }
  process.stdout.write(
    `\nPinned into ${path.relative(REPO_ROOT, overlay)}: release.yaml version ${version}, ${
      values['pin-by'] === 'digest' ? 'the digests above' : `the images by tag ${version}`
    }. Review and commit:\n  git diff ${path.relative(REPO_ROOT, overlay)}\n`,
  );
}

function printDigests(digests: Record<string, string>): void {
  const width = Math.max(...Object.keys(digests).map((target) => target.length));
  for (const [target, digest] of Object.entries(digests))
    process.stdout.write(`${target.padEnd(width)}  ${registry}/${target}:${version}@${digest}\n`);
}

if (values['dry-run']) {
  const plan = bakePlan(bake, env);
  const platforms = values.platforms?.split(',');
  const shown = Object.fromEntries(
    Object.entries(plan).map(([name, target]) => [name, platforms === undefined ? target : { ...target, platforms }]),
  );
  process.stdout.write(
    [
      `Would run, from ${REPO_ROOT}:`,
      `  REGISTRY=${registry} TAG=${version} COMMIT=${env.COMMIT} docker ${bakeArgs('<temporary>/metadata.json').join(' ')}`,
      `then pin ${values['no-pin'] ? 'nothing (--no-pin)' : `${path.relative(REPO_ROOT, overlay)} by ${values['pin-by']}`}.`,
      `The plan (${targets.length} images):`,
      JSON.stringify({ target: shown }, null, 2),
      '',
    ].join('\n'),
  );
  process.exit(0);
}

/** The digests of a bake run's metadata file, one per target of the bake file. */
function readDigests(metadataFile: string): Record<string, string> {
  try {
    return digestsFromMetadata(JSON.parse(readFileSync(metadataFile, 'utf8')) as Record<string, unknown>, targets);
  } catch (error) {
    return fail(`${metadataFile}: ${(error as Error).message}`);
  }
}

if (values['from-metadata'] !== undefined) {
  const digests = readDigests(values['from-metadata']);
  printDigests(digests);
  pin(digests);
  process.exit(0);
}

const buildx = spawnSync('docker', ['buildx', 'version'], { encoding: 'utf8' });
if (buildx.status !== 0)
  fail(
    'docker buildx is not available (install the buildx plugin, and a builder that can push multi-platform images: `docker buildx create --use`); --dry-run shows the plan without it',
  );

const scratch = mkdtempSync(path.join(tmpdir(), 'fin-release-'));
try {
  const metadataFile = path.join(scratch, 'metadata.json');
  const build = spawnSync('docker', bakeArgs(metadataFile), { cwd: REPO_ROOT, env, stdio: 'inherit' });
  if (build.status !== 0) fail(`docker buildx bake failed (exit ${build.status ?? build.signal}); nothing was pinned`);
  const digests = readDigests(metadataFile);
  process.stdout.write('\nPushed (each an image index for every platform, with its SBOM and provenance):\n');
  printDigests(digests);
  pin(digests);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
