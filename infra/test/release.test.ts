// Releasing by one command (`npm run release`, docs/deployment.md "Releases"), checked without a Docker engine: the
// bake file builds every deployable, for both architectures, with an SBOM and provenance; the pinning step writes a
// release into a copy of an overlay that then renders, on both kustomize versions, to the pushed digests; the dry
// run prints the plan; the CI workflow runs the command on a tag. Where buildx is installed, its own reading of the
// bake file (`bake --print`, no engine needed) is compared with the one the dry run and these tests use.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { BAKE_FILE, bakePlan, readBakeFile } from '../src/release/bake';
import { pinOverlay } from '../src/release/pin';
import { DEPLOYABLES, NOT_DEPLOYED, REPO_ROOT } from './support/deployables';
import { parseDockerfile } from './support/dockerfile';
import { KUBECTL, KUSTOMIZE_4, kubectlRenderer, renderChanged, type K8sObject, type Renderer } from './support/kubernetes';

const SERVICES = readdirSync(path.join(REPO_ROOT, 'services'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !(entry.name in NOT_DEPLOYED))
  .map((entry) => entry.name)
  .sort();
const REGISTRY = 'registry.acme.test/fin';
/** A digest per service, as a push reports them: distinct, and not the committed placeholders. */
const DIGESTS = Object.fromEntries(SERVICES.map((service, index) => [service, `sha256:${String(index + 1).repeat(64)}`]));
const RENDERERS: Renderer[] = [KUSTOMIZE_4, ...(KUBECTL === undefined ? [] : [kubectlRenderer(KUBECTL)])];

const versionOf = (overlay: string) =>
  (parse(readFileSync(path.join(REPO_ROOT, overlay, 'release.yaml'), 'utf8')) as { data: { version: string } }).data.version;
const PROD_VERSION = versionOf('k8s/overlays/prod');

const plan = bakePlan(readBakeFile(), { REGISTRY, TAG: '1.4.0', COMMIT: 'abc123' });

interface Container {
  name: string;
  image: string;
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
}
/** Every image the rendering runs: each container and init container of the Deployments and Jobs. */
function images(objects: K8sObject[]): string[] {
  return objects
    .filter((object) => object.kind === 'Deployment' || object.kind === 'Job')
    .flatMap((object) => {
      const spec = (object.spec as { template: { spec: PodSpec } }).template.spec;
      return [...spec.containers, ...(spec.initContainers ?? [])].map((container) => container.image);
    });
}
const jobNames = (objects: K8sObject[]) => objects.filter((object) => object.kind === 'Job').map((object) => object.metadata.name);
/** `change` run on a plain copy of an overlay (no rendering), for the checks of the files themselves. */
function withCopy(overlay: string, change: (dir: string, read: (file: string) => string) => void): void {
  const scratch = mkdtempSync(path.join(tmpdir(), 'fin-release-test-'));
  try {
    const dir = path.join(scratch, path.basename(overlay));
    cpSync(path.join(REPO_ROOT, overlay), dir, { recursive: true });
    change(dir, (file) => readFileSync(path.join(dir, file), 'utf8'));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
const withoutDigests = (objects: K8sObject[]) => JSON.stringify(objects).replace(/@sha256:[0-9a-f]{64}/g, '@…');

describe(`the bake file (${BAKE_FILE})`, () => {
  test('builds every deployable (the folders under services/ but the launcher), and nothing else', () => {
    expect(Object.keys(plan).sort()).toEqual(SERVICES);
    expect(SERVICES).toEqual(DEPLOYABLES.map((deployable) => deployable.service).sort());
  });

  test.each(SERVICES)(
    '%s: its SERVICE, the runtime stage, both architectures, an SBOM and provenance, <registry>/<service>:<tag>',
    (service) => {
      const stages = parseDockerfile(path.join(REPO_ROOT, 'Dockerfile')).stages.map((stage) => stage.name);
      const target = plan[service]!;
      expect(target).toEqual({
        context: '.',
        dockerfile: 'Dockerfile',
        target: 'runtime',
        platforms: ['linux/amd64', 'linux/arm64'],
        attest: expect.arrayContaining(['type=sbom', expect.stringMatching(/^type=provenance(,mode=max)?$/)]),
        args: { SERVICE: service, FIN_VERSION: '1.4.0', FIN_COMMIT: 'abc123' },
        tags: [`${REGISTRY}/${service}:1.4.0`],
      });
      expect(stages).toContain(target.target);
    },
  );

  const buildx = spawnSync('docker', ['buildx', 'version'], { encoding: 'utf8' });
  (buildx.status === 0 ? test : test.skip)("buildx's own reading (bake --print) is the plan the dry run shows", () => {
    const printed = JSON.parse(
      execFileSync('docker', ['buildx', 'bake', '--file', BAKE_FILE, '--print'], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        env: { ...process.env, REGISTRY, TAG: '1.4.0', COMMIT: 'abc123' },
      }),
    ) as { target: Record<string, { args: Record<string, string>; tags: string[]; platforms: string[] }> };
    for (const service of SERVICES)
      expect(printed.target[service]).toMatchObject({
        args: plan[service]!.args,
        tags: plan[service]!.tags,
        platforms: plan[service]!.platforms,
      });
  });
});

describe('pinning a release into the prod overlay', () => {
  test.each(RENDERERS.map((renderer) => [renderer.name, renderer] as const))(
    'on %s: every image is the pushed digest, no placeholder is left, and the Job is the release’s',
    (_name, renderer) => {
      const before = renderChanged('k8s/overlays/prod', () => undefined, renderer);
      expect(JSON.stringify(before)).toMatch(/@sha256:0{63}1/);
      const objects = renderChanged(
        'k8s/overlays/prod',
        (copy) => pinOverlay(copy.dir, { registry: REGISTRY, version: '1.4.0', digests: DIGESTS }),
        renderer,
      );
      const used = images(objects);
      expect(used.length).toBeGreaterThan(SERVICES.length);
      for (const image of used) {
        const match = /^registry\.acme\.test\/fin\/([a-z-]+)@(sha256:[0-9a-f]{64})$/.exec(image);
        expect({ image, pinned: match !== null && DIGESTS[match[1]!] === match[2] }).toEqual({ image, pinned: true });
      }
      expect(new Set(used.map((image) => image.split('@')[0]))).toEqual(new Set(SERVICES.map((service) => `${REGISTRY}/${service}`)));
      expect(JSON.stringify(objects)).not.toMatch(/sha256:0{60}/);
      expect(jobNames(objects)).toEqual(['migrate-1.4.0']);
      // Apart from the images, the version and the Job's name, the release changes nothing.
      const asBefore = withoutDigests(before)
        .replaceAll('registry.example.com/financial-intelligence', REGISTRY)
        .replaceAll(PROD_VERSION, '1.4.0');
      expect(withoutDigests(objects)).toBe(asBefore);
    },
  );

  test('the edit keeps the files as they were but for the values (comments stay, for review)', () => {
    withCopy('k8s/overlays/prod', (dir, read) => {
      const kustomization = read('kustomization.yaml');
      pinOverlay(dir, { registry: REGISTRY, version: '1.4.0', digests: DIGESTS });
      const changed = read('kustomization.yaml');
      const comments = (text: string) => text.split('\n').filter((line) => line.trim().startsWith('#'));
      expect(comments(changed)).toEqual(comments(kustomization));
      // Line for line the same file, but for the values.
      const before = kustomization.split('\n');
      const differing = changed.split('\n').filter((line, index) => line !== before[index]);
      expect(changed.split('\n')).toHaveLength(before.length);
      for (const line of differing) expect(line).toMatch(/^\s+(newName|digest): \S+$/);
      expect(changed).not.toMatch(/sha256:0{60}/);
      expect(read('release.yaml')).toMatch(/^ {2}version: 1\.4\.0$/m);
    });
  });

  test('refuses a release it cannot pin completely: a missing or placeholder digest, an unknown image, a bad version', () => {
    withCopy('k8s/overlays/prod', (dir) => {
      const { mcp: _missing, ...partial } = DIGESTS;
      const release = { registry: REGISTRY, version: '1.4.0' };
      expect(() => pinOverlay(dir, { ...release, digests: partial })).toThrow('no digest for fin-mcp');
      expect(() => pinOverlay(dir, { ...release, digests: { ...DIGESTS, mcp: `sha256:${'0'.repeat(63)}8` } })).toThrow(
        'not a pushed image',
      );
      expect(() => pinOverlay(dir, { ...release, digests: { ...DIGESTS, billing: DIGESTS.mcp! } })).toThrow(
        'lists no image for fin-billing',
      );
      expect(() => pinOverlay(dir, { ...release, version: 'v1.4.0+build.7', digests: DIGESTS })).toThrow('--tag v1.4.0+build.7');
    });
  });
});

describe('the dev overlay: a tag per build', () => {
  test('the committed version is not a moving tag: each build sets its own (main-<commit>), so the Job is new too', () => {
    const version = versionOf('k8s/overlays/dev');
    expect(version).toMatch(/^main-[0-9a-f]{7,}$/);
  });

  test.each(RENDERERS.map((renderer) => [renderer.name, renderer] as const))(
    'pinned by tag on %s: every image at the build’s tag, migrate-<tag>',
    (_name, renderer) => {
      const objects = renderChanged(
        'k8s/overlays/dev',
        (copy) => pinOverlay(copy.dir, { registry: REGISTRY, version: 'main-3f2c1ab9d0e4' }),
        renderer,
      );
      for (const image of images(objects)) expect(image).toMatch(/^registry\.acme\.test\/fin\/[a-z-]+:main-3f2c1ab9d0e4$/);
      expect(jobNames(objects)).toEqual(['migrate-main-3f2c1ab9d0e4']);
    },
  );
});

describe('npm run release', () => {
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'infra/src/release/cli.ts'), ...args], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      // No docker on the PATH: the dry run and pinning from metadata need none.
      env: { ...process.env, PATH: path.dirname(process.execPath) },
    });

  test('--dry-run prints the bake command and the plan, without buildx or an engine', () => {
    const run = cli('--registry', REGISTRY, '--tag', '1.4.0', '--commit', 'abc123', '--dry-run');
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(
      `REGISTRY=${REGISTRY} TAG=1.4.0 COMMIT=abc123 docker buildx bake --file ${BAKE_FILE} --push --metadata-file`,
    );
    const printed = JSON.parse(run.stdout.slice(run.stdout.indexOf('{'))) as { target: Record<string, unknown> };
    expect(printed.target).toEqual(plan);
  });

  test("pins an earlier bake's metadata into an overlay and prints the digests", () => {
    const scratch = mkdtempSync(path.join(tmpdir(), 'fin-release-test-'));
    try {
      const metadata = path.join(scratch, 'metadata.json');
      writeFileSync(
        metadata,
        JSON.stringify(
          Object.fromEntries(
            SERVICES.map((service) => [
              service,
              { 'containerimage.digest': DIGESTS[service], 'image.name': `${REGISTRY}/${service}:1.4.0` },
            ]),
          ),
        ),
      );
      withCopy('k8s/overlays/prod', (dir, read) => {
        const run = cli('--registry', REGISTRY, '--tag', '1.4.0', '--overlay', dir, '--from-metadata', metadata);
        expect(run.stderr).toBe('');
        for (const service of SERVICES) expect(run.stdout).toContain(`${REGISTRY}/${service}:1.4.0@${DIGESTS[service]}`);
        const { images: pinned } = parse(read('kustomization.yaml')) as { images: { name: string; newName: string; digest: string }[] };
        expect(pinned).toHaveLength(SERVICES.length);
        for (const { name, newName, digest } of pinned) {
          const service = name.replace(/^fin-/, '');
          expect({ newName, digest }).toEqual({ newName: `${REGISTRY}/${service}`, digest: DIGESTS[service] });
        }
      });
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  test('refuses to start without --registry and --tag, or with a tag that cannot be a version', () => {
    expect(cli('--tag', '1.4.0', '--dry-run')).toMatchObject({
      status: 2,
      stderr: expect.stringContaining('--registry and --tag are required'),
    });
    expect(cli('--registry', REGISTRY, '--tag', 'V1.4', '--dry-run')).toMatchObject({
      status: 2,
      stderr: expect.stringContaining('--tag V1.4'),
    });
  });
});

describe('the CI workflow (.github/workflows/release.yml)', () => {
  interface Step {
    uses?: string;
    run?: string;
    with?: Record<string, string>;
    env?: Record<string, string>;
  }
  const workflow = parse(readFileSync(path.join(REPO_ROOT, '.github/workflows/release.yml'), 'utf8')) as {
    on: { push: { tags: string[]; branches: string[] } };
    permissions: Record<string, string>;
    jobs: Record<string, { steps: Step[] }>;
  };
  const steps = Object.values(workflow.jobs).flatMap((job) => job.steps);

  test('on a v* tag: logs in to the registry, then runs the release with the tag as the version, and proposes the pinned overlay', () => {
    expect(workflow.on.push.tags).toEqual(['v*']);
    const uses = steps.map((step) => step.uses?.split('@')[0]);
    expect(uses).toEqual(expect.arrayContaining(['docker/setup-qemu-action', 'docker/setup-buildx-action', 'docker/login-action']));
    const release = steps.findIndex((step) => step.run?.includes('npm run release --'));
    expect(release).toBeGreaterThan(uses.indexOf('docker/login-action'));
    expect(steps[release]!.run).toMatch(/--registry "\$RELEASE_REGISTRY" --tag "\$VERSION"/);
    // Values from the event reach the shell through the environment, never spliced into its text.
    for (const step of steps) expect(step.run ?? '').not.toContain('${{');
    expect(steps.some((step) => step.run?.includes('gh pr create') && step.run.includes('k8s/overlays/prod/kustomization.yaml'))).toBe(
      true,
    );
    expect(workflow.permissions).toMatchObject({ contents: 'write', 'pull-requests': 'write' });
  });
});
