#!/usr/bin/env node
// The images' HEALTHCHECK, in plain Node (the slim image has no curl). Exit 0 healthy, 1 not.
//   API roles:    GET /healthz on the service's own port (PORT).
//   worker roles: (<SERVICE>_ROLE=worker, no API port) GET /healthz on the metrics listener (METRICS_PORT), which
//                 answers as long as the process's event loop does.
//
// FIN_SERVICE is set by the Dockerfile. PORT and METRICS_PORT are read as the service reads them; when one is
// unset or blank the service listens on its config default, listed here (infra/test/image.test.ts checks both
// lists against each service's config shape, so they cannot drift).
'use strict';

const DEFAULT_PORTS = { gateway: 8080, news: 8081, 'stock-report': 8082, analysis: 8083, chat: 8084, jobs: 8085, portal: 8086, mcp: 8087 };
/** The metrics listener's default port of every service with a worker role. */
const DEFAULT_METRICS_PORTS = { news: 9081, 'stock-report': 9082, analysis: 9083 };

function main() {
  const service = process.env.FIN_SERVICE ?? '';
  const worker = process.env[`${service.toUpperCase().replace(/-/g, '_')}_ROLE`] === 'worker';
  const [variable, defaults] = worker ? ['METRICS_PORT', DEFAULT_METRICS_PORTS] : ['PORT', DEFAULT_PORTS];
  const port = process.env[variable]?.trim() || (Object.hasOwn(defaults, service) ? defaults[service] : undefined);
  if (port === undefined) {
    process.stderr.write(
      `healthcheck: no ${variable} and no default ${variable} for FIN_SERVICE="${service}"${worker ? ' (worker role)' : ''}\n`,
    );
    process.exit(1);
  }
  fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
    (response) => process.exit(response.ok ? 0 : 1),
    () => process.exit(1),
  );
}

if (require.main === module) main();
else module.exports = { DEFAULT_PORTS, DEFAULT_METRICS_PORTS };
