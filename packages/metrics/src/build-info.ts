// fin_build_info: which release a process runs, as the conventional info metric (always 1, facts in labels), so a
// dashboard can show versions side by side during a rollout and an alert can be read against a release.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { buildInfo } from './catalog';

/** An unset or empty variable is "not given" (an image built without the build argument sets it to ""). */
const optionalText = () =>
  z
    .string()
    .trim()
    .max(200)
    .optional()
    .transform((value) => value || undefined);

/** Set in the image (Dockerfile build arguments FIN_VERSION and FIN_COMMIT). */
export const buildConfigShape = {
  FIN_VERSION: optionalText(),
  FIN_COMMIT: optionalText(),
};

/** The version in this package's package.json: every workspace package carries the release's version. */
function packageVersion(): string {
  // src/ and dist/ are both one level below package.json.
  const manifest: unknown = JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));
  return z.object({ version: z.string() }).parse(manifest).version;
}

/** Sets fin_build_info (once per process; a second call replaces the first). */
export function recordBuildInfo({ version, commit }: { version?: string | undefined; commit?: string | undefined } = {}): void {
  buildInfo.reset();
  buildInfo.set({ version: version ?? packageVersion(), commit: commit ?? '', node_version: process.version }, 1);
}
