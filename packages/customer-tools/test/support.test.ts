// The test support leaves nothing behind: the certificate's folder goes with the process that made it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

describe('the test certificate', () => {
  it('is written to a temporary folder that is removed when its process exits', () => {
    const script = `import('./support/index.ts').then((m) => m.testCertificate()).then((c) => console.log(c.certFile))`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: __dirname,
      encoding: 'utf8',
    });
    expect(child.status).toBe(0);
    const certFile = child.stdout.trim();
    expect(path.basename(certFile)).toBe('cert.pem');
    expect(path.basename(path.dirname(certFile))).toMatch(/^fin-tools-cert-/);
    expect(existsSync(path.dirname(certFile))).toBe(false);
  }, 30_000);
});
