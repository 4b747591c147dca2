// Workers drain on SIGTERM: they stop claiming jobs and let those in flight finish for WORKER_DRAIN_TIMEOUT_MS
// before handing back the rest (packages/job-kit/src/worker.ts). Kubernetes kills the container at
// terminationGracePeriodSeconds, and Compose at stop_grace_period, so in every rendered overlay and in
// docker-compose.yml each worker's grace period must cover its drain time plus the time to close its connections
// afterwards; otherwise a drained job is killed mid-commit.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { environmentOf, readCompose, readEnvFile, type ComposeService } from './support/compose';
import { REPO_ROOT } from './support/deployables';
import { render, type K8sObject } from './support/kubernetes';

const OVERLAYS = readdirSync(path.join(REPO_ROOT, 'k8s/overlays')).map((name) => `k8s/overlays/${name}`);

/** After the drain: the relay's last batch, the Kafka consumer leaving its group, the producer and the pool closing. */
const CLOSE_MARGIN_MS = 10_000;

/** The product services whose worker role runs jobs (the job types of @fin/events). */
const PRODUCT_WORKERS = ['analysis-worker', 'news-worker', 'stock-report-worker'];

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { configMapKeyRef?: { name: string; key: string } };
}

interface WorkerDeployment {
  name: string;
  graceSeconds: number | undefined;
  env: EnvVar[];
}

function workers(objects: K8sObject[]): WorkerDeployment[] {
  return objects
    .filter((object) => object.kind === 'Deployment' && object.metadata.labels?.['app.kubernetes.io/component'] === 'worker')
    .map((object) => {
      const spec = (
        object.spec as { template: { spec: { terminationGracePeriodSeconds?: number; containers: { name: string; env?: EnvVar[] }[] } } }
      ).template.spec;
      const app = spec.containers.find((container) => container.name === 'app');
      return { name: object.metadata.name, graceSeconds: spec.terminationGracePeriodSeconds, env: app?.env ?? [] };
    });
}

/** The variable's value, literal or from a rendered ConfigMap; undefined when the Deployment does not set it. */
function envValue(objects: K8sObject[], env: EnvVar[], name: string): string | undefined {
  const variable = env.find((candidate) => candidate.name === name);
  if (!variable) return undefined;
  if (variable.value !== undefined) return variable.value;
  const ref = variable.valueFrom?.configMapKeyRef;
  if (!ref) return undefined;
  const map = objects.find(
    (object): object is K8sObject & { data?: Record<string, string> } => object.kind === 'ConfigMap' && object.metadata.name === ref.name,
  );
  return map?.data?.[ref.key];
}

describe.each(OVERLAYS)('drain settings of %s', (overlay) => {
  const objects = render(overlay);
  const deployments = workers(objects);

  it('has every product worker role', () => {
    expect(deployments.map((deployment) => deployment.name).sort()).toEqual(PRODUCT_WORKERS);
  });

  it.each(PRODUCT_WORKERS)('gives %s a grace period of at least its drain time plus the closing margin', (name) => {
    const deployment = deployments.find((candidate) => candidate.name === name)!;
    const drain = envValue(objects, deployment.env, 'WORKER_DRAIN_TIMEOUT_MS');
    // Set in the manifest, next to the grace period, rather than left to the service's default, which could change apart from it.
    expect(drain).toMatch(/^\d+$/);
    expect(deployment.graceSeconds).toBeDefined();
    expect(deployment.graceSeconds! * 1_000).toBeGreaterThanOrEqual(Number(drain) + CLOSE_MARGIN_MS);
  });
});

/** Compose's durations as used here: `35s`, `2m`, `1m30s`. */
function seconds(duration: string): number {
  const match = /^(?:(\d+)m)?(?:(\d+)s)?$/.exec(duration);
  if (!match || duration === '') throw new Error(`not a duration of minutes and seconds: ${duration}`);
  return Number(match[1] ?? 0) * 60 + Number(match[2] ?? 0);
}

describe('drain settings of docker-compose.yml', () => {
  const compose = readCompose(path.join(REPO_ROOT, 'docker-compose.yml'), readEnvFile(path.join(REPO_ROOT, '.env.example')));
  const services = compose.services as Record<string, ComposeService & { stop_grace_period?: string }>;

  it.each(PRODUCT_WORKERS)('gives %s a stop_grace_period of at least its drain time plus the closing margin', (name) => {
    const service = services[name]!;
    const drain = environmentOf(service).WORKER_DRAIN_TIMEOUT_MS;
    expect(drain).toMatch(/^\d+$/);
    expect(service.stop_grace_period).toBeDefined();
    expect(seconds(service.stop_grace_period!) * 1_000).toBeGreaterThanOrEqual(Number(drain) + CLOSE_MARGIN_MS);
  });
});
