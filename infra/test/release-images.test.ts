// Every deployable is released: the list of deployables is derived from services/ (not from a table a new
// service could be forgotten in), and every list of images that a release goes through names each one — the
// release's bake file (infra/docker-bake.json), both overlays' `images`, the digests prod pins, and docker-compose.yml.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { readBakeFile, type BakeFile } from '../src/release/bake';
import { DEPLOYABLES, NOT_DEPLOYED, REPO_ROOT } from './support/deployables';

const SERVICES_DIR = path.join(REPO_ROOT, 'services');
const DEPLOYMENT_DOC = readFileSync(path.join(REPO_ROOT, 'docs/deployment.md'), 'utf8');
const OVERLAYS = readdirSync(path.join(REPO_ROOT, 'k8s/overlays')).map((name) => `k8s/overlays/${name}`);

interface PackageJson {
  name: string;
  dependencies?: Record<string, string>;
}
const packageOf = (folder: string) => JSON.parse(readFileSync(path.join(SERVICES_DIR, folder, 'package.json'), 'utf8')) as PackageJson;

/**
 * The folders under services/, split as the architecture splits them: a deployable is a service that depends on
 * no other service (services share only packages), and becomes an image of its own; a folder that depends on
 * services composes them in one process (the `npm start` launcher) and is not deployed.
 */
function deriveDeployables(): { deployables: string[]; launchers: string[] } {
  const folders = readdirSync(SERVICES_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);
  const serviceNames = new Set(folders.map((folder) => packageOf(folder).name));
  const deployables: string[] = [];
  const launchers: string[] = [];
  for (const folder of folders) {
    const { name, dependencies = {} } = packageOf(folder);
    const composes = Object.keys(dependencies).some((dependency) => dependency !== name && serviceNames.has(dependency));
    (composes ? launchers : deployables).push(folder);
  }
  return { deployables: deployables.sort(), launchers: launchers.sort() };
}

const { deployables: DERIVED, launchers: LAUNCHERS } = deriveDeployables();
const NUMBERS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];

/** The services the release builds, pushes and pins: the targets of the bake file's default group. */
function releasedServices(bake: BakeFile): string[] {
  return [...(bake.group?.default?.targets ?? [])].sort();
}

interface ImageEntry {
  name: string;
  newName?: string;
  digest?: string;
}
const imagesOf = (overlay: string) =>
  (parse(readFileSync(path.join(REPO_ROOT, overlay, 'kustomization.yaml'), 'utf8')) as { images?: ImageEntry[] }).images ?? [];

test('the deployables are the folders under services/ that compose no other service: the infra tests deploy each one', () => {
  expect(DERIVED.length).toBeGreaterThan(0);
  expect(DERIVED).toEqual(DEPLOYABLES.map((deployable) => deployable.service).sort());
  // The launcher is the one folder left out, and the only one.
  expect(LAUNCHERS).toEqual(Object.keys(NOT_DEPLOYED).sort());
});

test('the derivation sees a new service: a folder that depends only on packages is a deployable', () => {
  expect(DERIVED).toContain('mcp');
  expect(LAUNCHERS).toContain('standalone');
  expect(Object.keys(packageOf('standalone').dependencies ?? {})).toEqual(expect.arrayContaining(['@fin/gateway']));
});

test("the release (npm run release, infra/docker-bake.json) builds, pushes and pins every deployable's image", () => {
  expect(releasedServices(readBakeFile())).toEqual(DERIVED);
  // The deployables table names each image.
  for (const service of DERIVED)
    expect({ service, inTable: DEPLOYMENT_DOC.includes(`| \`fin-${service}\` |`) }).toEqual({ service, inTable: true });
  // Where the docs count the images, the count is right.
  for (const [phrase, word] of DEPLOYMENT_DOC.matchAll(/\b(?:all|the) (\w+) images\b/g))
    if (NUMBERS.includes(word!)) expect({ phrase, count: NUMBERS.indexOf(word!) }).toEqual({ phrase, count: DERIVED.length });
});

test.each(OVERLAYS)("%s: `images` sets every deployable's registry (and prod its digest)", (overlay) => {
  const images = imagesOf(overlay);
  expect(images.map((image) => image.name).sort()).toEqual(DERIVED.map((service) => `fin-${service}`));
  for (const { name, newName, digest } of images) {
    const service = name.replace(/^fin-/, '');
    expect({ name, repository: newName?.split('/').at(-1) }).toEqual({ name, repository: service });
    if (overlay.endsWith('/prod')) expect({ name, digest }).toEqual({ name, digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
  }
});

test('docker-compose.yml builds and runs every deployable from its own image', () => {
  const compose = parse(readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, { image?: string; build?: { args?: Record<string, string> } }>;
  };
  const built = new Map<string, Set<string>>();
  for (const { image, build } of Object.values(compose.services)) {
    const service = build?.args?.SERVICE;
    if (service === undefined) continue;
    built.set(service, (built.get(service) ?? new Set()).add(image ?? ''));
  }
  expect([...built.keys()].sort()).toEqual(DERIVED);
  for (const [service, images] of built) expect({ service, images: [...images] }).toEqual({ service, images: [`fin-${service}:local`] });
});

describe('the checks themselves', () => {
  test('a release that forgets a service, or a wrong count, is caught', () => {
    const bake = readBakeFile();
    const forgetful = { ...bake, group: { default: { targets: bake.group!.default!.targets.filter((target) => target !== 'mcp') } } };
    expect(releasedServices(forgetful)).not.toEqual(DERIVED);
    expect(DEPLOYMENT_DOC).not.toMatch(/\b(?:all|the) seven images\b/);
  });
});
