// Writes a release into an overlay, the two places docs/deployment.md ("Releases") names: the version in
// release.yaml, and each image's registry (and, for prod, its digest) in the kustomization's `images`. Comments and
// layout of both files are kept, so the change reviews as a diff of those values only.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isMap, isScalar, isSeq, parse, parseDocument, type Document, type YAMLMap } from 'yaml';

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

/**
 * The document's text with its values changed in place: each value that already exists is replaced where it stands,
 * so nothing else of the file moves (re-serialising would re-indent comments). `change` sets the values on the
 * document; if it also added or removed a key (say, a digest where there was none), the document is serialised.
 */
function editInPlace(text: string, change: (document: Document, edit: (node: unknown, value: string) => boolean) => boolean): string {
  const document = parseDocument(text);
  const edits: { start: number; end: number; value: string }[] = [];
  const edit = (node: unknown, value: string): boolean => {
    if (!isScalar(node) || !node.range) return false;
    // Plain when it reads back as the same string (not 1.4 as a number), quoted otherwise.
    const written = parse(value) === value ? value : JSON.stringify(value);
    edits.push({ start: node.range[0], end: node.range[1], value: written });
    return true;
  };
  const structural = change(document, edit);
  if (structural) return document.toString();
  let result = text;
  for (const { start, end, value } of edits.sort((a, b) => b.start - a.start)) result = result.slice(0, start) + value + result.slice(end);
  return result;
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
  const releaseText = editInPlace(readFileSync(releaseFile, 'utf8'), (document, edit) => {
    if (!document.hasIn(['data', 'version'])) throw new Error(`${releaseFile} has no data.version`);
    if (edit(document.getIn(['data', 'version'], true), release.version)) return false;
    document.setIn(['data', 'version'], release.version);
    return true;
  });

  const kustomizationFile = path.join(dir, 'kustomization.yaml');
  const pinned = new Set<string>();
  const kustomizationText = editInPlace(readFileSync(kustomizationFile, 'utf8'), (document, edit) => {
    const images = document.get('images');
    if (!isSeq(images)) throw new Error(`${kustomizationFile} has no images`);
    let structural = false;
    /** Sets `key` to `value` in place, or (structurally) where it is missing. */
    const set = (entry: YAMLMap<string>, key: string, value: string) => {
      if (edit(entry.get(key, true), value)) return;
      entry.set(key, value);
      structural = true;
    };
    for (const item of images.items) {
      if (!isMap(item)) throw new Error(`${kustomizationFile}: an images entry that is not a map`);
      const entry = item as YAMLMap<string>;
      const name = String(entry.get('name'));
      const service = /^fin-([a-z0-9-]+)$/.exec(name)?.[1];
      if (service === undefined) continue;
      set(entry, 'newName', `${registry}/${service}`);
      if (entry.has('newTag')) {
        entry.delete('newTag');
        structural = true;
      }
      if (release.digests === undefined) {
        if (entry.has('digest')) {
          entry.delete('digest');
          structural = true;
        }
        continue;
      }
      const digest = release.digests[service];
      if (digest === undefined) throw new Error(`no digest for ${name}: the release did not push it`);
      if (!DIGEST.test(digest) || PLACEHOLDER.test(digest)) throw new Error(`${name}: ${digest} is not a pushed image's digest`);
      set(entry, 'digest', digest);
      pinned.add(service);
    }
    return structural;
  });
  if (release.digests !== undefined) {
    const extra = Object.keys(release.digests).filter((service) => !pinned.has(service));
    if (extra.length > 0) throw new Error(`${kustomizationFile} lists no image for ${extra.map((service) => `fin-${service}`).join(', ')}`);
  }
  // Written only once both are known to be complete: a refused release leaves the overlay as it was.
  writeFileSync(releaseFile, releaseText);
  writeFileSync(kustomizationFile, kustomizationText);
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
