// Paths inside the service images (the Dockerfile's runtime stage puts the assembled tree at /app). Compose,
// Kubernetes and docs/deployment.md use these; image.test.ts proves they exist and work in a built image.
export const APP = '/app';
export const MIGRATE = ['node', '/app/packages/db/dist/cli.js', 'migrate'];
export const ADMIN = ['node', '/app/services/gateway/dist/admin/cli.js'];
export const WAIT_FOR_SCHEMA = ['node', '/app/bin/wait-for-schema.cjs'];
export const HEALTHCHECK = ['node', '/app/bin/healthcheck.cjs'];
/**
 * The Kubernetes migration Job's command (k8s/base/migrate-job.yaml): forward-only and idempotent. wait-for-schema
 * (with SCHEMA_WAIT_TIMEOUT_S=1: one look) exits 0 when the database holds every migration the image knows, at this
 * release or a newer one; only otherwise does the runner run, so an older release's Job succeeds after a rollback.
 */
export const MIGRATION_JOB = ['sh', '-c', `${WAIT_FOR_SCHEMA.join(' ')} || exec ${MIGRATE.join(' ')}`];
