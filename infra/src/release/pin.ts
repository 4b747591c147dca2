// Writes a release into an overlay, the two places docs/deployment.md ("Releases") names: the version in
// release.yaml, and each image's registry (and, for prod, its digest) in the kustomization's `images`. Comments and
// layout of both files are kept, so the change reviews as a diff of those values only.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isMap, isSeq, parseDocument, type YAMLMap } from 'yaml';

/** A label value and the end of the migration Job's name (migrate-<version>, at most 63 characters). */
const VERSION = /^[a-z0-9](?:[a-z0-9.-]{0,53}[a-z0-9])?$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;
/** Committed placeholders (sha256:00…01 … 00…08): never what a release pins. */
const PLACEHOLDER = /^sha256:0{60}[0-9a-f]{4}$/;

export function checkVersion(version: string): string {
  if (!VERSION.test(version))
    throw new Error(
      `--tag ${version}: a release version is a label value and part of a name: lower-case letters, digits, '.' and '-', at most 55 characters, starting and ending with a letter or digit (1.4.0, main-3f2c1ab)`,
    );
  return version;
}

export interface Release {
  /** Where the images were pushed: the image of service s is `<registry>/<s>`. */
  registry: string;
  version: string;
  /** Per service (folder under services/): the pushed image's digest. Omitted: the overlay deploys by tag. */
  digests?: Record<string, string>;
}

/**
 * Pins `release` into the overlay at `dir`: release.yaml's `version`, and for every `fin-<service>` entry of
 * `images` its `newName` and, with digests, its `digest` (without: the digest is removed and the version is the
 * tag). Every image the overlay lists must have a digest when digests are given; extra digests are refused too,
 * so a service added to the bake file and not to the overlay (or the reverse) fails the release.
 */
export function pinOverlay(dir: string, release: Release): void {
  checkVersion(release.version);
  const registry = release.registry.replace(/\/+$/, '');
  if (!/^[a-z0-9.-]+(?::\d+)?(?:\/[a-z0-9._-]+)*$/.test(registry))
    throw new Error(`--registry ${release.registry}: not an image repository prefix`);

  const releaseFile = path.join(dir, 'release.yaml');
  const releaseDoc = parseDocument(readFileSync(releaseFile, 'utf8'));
  if (!releaseDoc.hasIn(['data', 'version'])) throw new Error(`${releaseFile} has no data.version`);
  releaseDoc.setIn(['data', 'version'], release.version);

  const kustomizationFile = path.join(dir, 'kustomization.yaml');
  const kustomization = parseDocument(readFileSync(kustomizationFile, 'utf8'));
  const images = kustomization.get('images');
  if (!isSeq(images)) throw new Error(`${kustomizationFile} has no images`);
  const pinned = new Set<string>();
  for (const item of images.items) {
    if (!isMap(item)) throw new Error(`${kustomizationFile}: an images entry that is not a map`);
    const entry = item as YAMLMap<string>;
    const name = String(entry.get('name'));
    const service = /^fin-([a-z0-9-]+)$/.exec(name)?.[1];
    if (service === undefined) continue;
    entry.set('newName', `${registry}/${service}`);
    entry.delete('newTag');
    if (release.digests === undefined) {
      entry.delete('digest');
      continue;
    }
    const digest = release.digests[service];
    if (digest === undefined) throw new Error(`no digest for ${name}: the release did not push it`);
    if (!DIGEST.test(digest) || PLACEHOLDER.test(digest)) throw new Error(`${name}: ${digest} is not a pushed image's digest`);
    entry.set('digest', digest);
    pinned.add(service);
  }
  if (release.digests !== undefined) {
    const extra = Object.keys(release.digests).filter((service) => !pinned.has(service));
    if (extra.length > 0) throw new Error(`${kustomizationFile} lists no image for ${extra.map((service) => `fin-${service}`).join(', ')}`);
  }
  writeFileSync(releaseFile, releaseDoc.toString());
  writeFileSync(kustomizationFile, kustomization.toString());
}

/**
 * The digests of a `docker buildx bake --metadata-file` run, per target: `containerimage.digest`, which for a
 * multi-platform push is the image index's (the one reference every node architecture resolves).
 */
export function digestsFromMetadata(metadata: Record<string, unknown>, targets: string[]): Record<string, string> {
  const digests: Record<string, string> = {};
  for (const target of targets) {
    const entry = metadata[target] as Record<string, unknown> | undefined;
    const digest = entry?.['containerimage.digest'];
    if (typeof digest !== 'string' || !DIGEST.test(digest)) throw new Error(`the build metadata has no digest for ${target}`);
    digests[target] = digest;
  }
  return digests;
}
