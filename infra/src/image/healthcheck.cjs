#!/usr/bin/env node
// The images' HEALTHCHECK: GET /healthz on the service's own port. Plain Node (the slim image has no curl).
// Exit 0 healthy, 1 not. A worker role (<SERVICE>_ROLE=worker) has no /healthz, so there is nothing to ask.
//
// FIN_SERVICE is set by the Dockerfile. PORT is read as the service reads it; when it is unset or blank the
// service listens on its config default, listed here (infra/test/image.test.ts checks the list against each
// service's config shape, so the two cannot drift).
'use strict';

const DEFAULT_PORTS = { gateway: 8080, news: 8081, 'stock-report': 8082, analysis: 8083, chat: 8084, jobs: 8085 };

function main() {
  const service = process.env.FIN_SERVICE ?? '';
  const role = process.env[`${service.toUpperCase().replace(/-/g, '_')}_ROLE`];
  if (role === 'worker') process.exit(0);

  const port = process.env.PORT?.trim() || DEFAULT_PORTS[service];
  if (port === undefined) {
    process.stderr.write(`healthcheck: no PORT and no default port for FIN_SERVICE="${service}"\n`);
    process.exit(1);
  }
  fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
    (response) => process.exit(response.ok ? 0 : 1),
    () => process.exit(1),
  );
}

if (require.main === module) main();
else module.exports = { DEFAULT_PORTS };
