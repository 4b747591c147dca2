// Paths inside the service images (the Dockerfile's runtime stage puts the assembled tree at /app). Compose,
// Kubernetes and docs/deployment.md use these; image.test.ts proves they exist and work in a built image.
export const APP = '/app';
export const MIGRATE = ['node', '/app/packages/db/dist/cli.js', 'migrate'];
export const ADMIN = ['node', '/app/services/gateway/dist/admin/cli.js'];
export const WAIT_FOR_SCHEMA = ['node', '/app/bin/wait-for-schema.cjs'];
export const HEALTHCHECK = ['node', '/app/bin/healthcheck.cjs'];
