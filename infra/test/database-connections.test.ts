// The connection budget (docs/deployment.md, "Database connections"), computed from each rendered overlay: every
// Deployment that uses the database, at its autoscaler's maximum plus a rollout's surge (a release rolls every
// Deployment at once), times what one of its pods opens (its pool, DATABASE_POOL_MAX as its service parses it, and
// the connections held outside the pool), plus the deployment-wide ones, must fit the CloudNativePG Cluster's
// max_connections less the superuser-reserved slots and room for an operator's psql.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEPLOYABLES, REPO_ROOT, loadConfigShape, parseServiceConfig, workloadName } from './support/deployables';
import { enableComponents, render, renderChanged, type K8sObject } from './support/kubernetes';

const DEPLOYMENT_DOC = readFileSync(path.join(REPO_ROOT, 'docs/deployment.md'), 'utf8');

/** Connections a process holds outside its pool (docs/deployment.md's table): its own LISTEN connection. */
const OUTSIDE_THE_POOL: Record<string, number> = { gateway: 1, 'analysis-api': 1 };
/** Once per deployment: the relay leader's LISTEN outbox, and the release's migration Job. */
const DEPLOYMENT_WIDE = 2;
/** Room kept for an operator's psql, a monitoring exporter and the like. */
const HEADROOM = 10;
/** PostgreSQL's default superuser_reserved_connections (CloudNativePG's instance manager connects as superuser). */
const DEFAULT_RESERVED = 3;

interface Deployment extends K8sObject {
  spec: {
    strategy?: { rollingUpdate?: { maxSurge?: number | string } };
    template: { spec: { containers: { name: string; env?: { name: string; value?: string; valueFrom?: unknown }[] }[] } };
  };
}
interface Cluster extends K8sObject {
  spec: { postgresql?: { parameters?: Record<string, string> } };
}

interface Line {
  deployment: string;
  perPod: number;
  pods: number;
  connections: number;
}

/** The budget of a rendered overlay, line by line. */
async function budget(objects: K8sObject[]): Promise<{ lines: Line[]; total: number }> {
  const deployments = objects.filter((object): object is Deployment => object.kind === 'Deployment');
  const maxReplicas = new Map<string, number>();
  for (const object of objects) {
    const spec = object.spec as { scaleTargetRef?: { name: string }; maxReplicas?: number; maxReplicaCount?: number };
    if (object.kind === 'HorizontalPodAutoscaler') maxReplicas.set(spec.scaleTargetRef!.name, spec.maxReplicas!);
    if (object.kind === 'ScaledObject') maxReplicas.set(spec.scaleTargetRef!.name, spec.maxReplicaCount!);
  }
  const lines: Line[] = [];
  for (const deployable of DEPLOYABLES) {
    const shape = await loadConfigShape(deployable.service);
    for (const role of deployable.roles) {
      const name = workloadName(deployable, role);
      const deployment = deployments.find((candidate) => candidate.metadata.name === name);
      if (!deployment) throw new Error(`no Deployment ${name}`);
      const app = deployment.spec.template.spec.containers.find((container) => container.name === 'app')!;
      if (!app.env?.some((variable) => variable.name === 'DATABASE_URL')) continue;
      // The pool as the service sizes it: its literal variables parsed by its config (defaults included).
      const literals = Object.fromEntries(
        (app.env ?? [])
          .filter((variable) => variable.value !== undefined && variable.name in shape)
          .map((variable) => [variable.name, variable.value!]),
      );
      const pool = pickPool(shape, literals);
      const surge = Number(deployment.spec.strategy?.rollingUpdate?.maxSurge ?? NaN);
      const max = maxReplicas.get(name);
      if (max === undefined || !Number.isInteger(surge)) throw new Error(`${name}: no autoscaler maximum or no integer maxSurge`);
      const perPod = pool + (OUTSIDE_THE_POOL[name] ?? 0);
      lines.push({ deployment: name, perPod, pods: max + surge, connections: perPod * (max + surge) });
    }
  }
  return { lines, total: lines.reduce((sum, line) => sum + line.connections, 0) + DEPLOYMENT_WIDE };
}

/** DATABASE_POOL_MAX as the service reads it (chat's deprecated CHAT_DB_POOL_SIZE wins when set). */
function pickPool(shape: Awaited<ReturnType<typeof loadConfigShape>>, literals: Record<string, string>): number {
  const pick = Object.fromEntries(
    ['DATABASE_POOL_MAX', 'CHAT_DB_POOL_SIZE'].filter((key) => key in shape).map((key) => [key, shape[key]!]),
  );
  const config = parseServiceConfig(pick, Object.fromEntries(Object.entries(literals).filter(([key]) => key in pick)));
  return (config.CHAT_DB_POOL_SIZE as number | undefined) ?? (config.DATABASE_POOL_MAX as number);
}

function clusterLimits(objects: K8sObject[]): { maxConnections: number; reserved: number } {
  const clusters = objects.filter((object): object is Cluster => object.kind === 'Cluster');
  expect(clusters).toHaveLength(1);
  const parameters = clusters[0]!.spec.postgresql?.parameters ?? {};
  // PostgreSQL's default is 100: a Cluster that does not say is held to that.
  return {
    maxConnections: Number(parameters.max_connections ?? 100),
    reserved: Number(parameters.superuser_reserved_connections ?? DEFAULT_RESERVED),
  };
}

const CASES: [string, () => K8sObject[]][] = [
  ['k8s/overlays/dev', () => render('k8s/overlays/dev')],
  ['k8s/overlays/prod + cloudnative-pg', () => renderChanged('k8s/overlays/prod', (copy) => enableComponents(copy, ['cloudnative-pg']))],
];

describe.each(CASES)('%s', (_name, renderOverlay) => {
  let objects: K8sObject[];
  beforeAll(() => {
    objects = renderOverlay();
  });

  test("every pool at the autoscalers' maxima, with a rollout's surge, fits the Cluster's max_connections", async () => {
    const { lines, total } = await budget(objects);
    expect(lines.length).toBeGreaterThan(5);
    const { maxConnections, reserved } = clusterLimits(objects);
    expect({ total, reserved, headroom: HEADROOM, fits: total + reserved + HEADROOM <= maxConnections }).toEqual({
      total,
      reserved,
      headroom: HEADROOM,
      fits: true,
    });
    // docs/deployment.md states the total each overlay's Cluster is sized for.
    expect(DEPLOYMENT_DOC).toContain(`**${total}**`);
  });

  // A worker's pool holds the relay's session, one claim (claims are made one at a time) and the renewal of all its
  // leases (one statement a heartbeat), and for its jobs' own writes (running, progress at most every 250 ms, the
  // final commit: a few short statements a job, at the model's pace) one connection per 100 jobs in flight. No job
  // holds a connection while it waits for the model, so the pool does not grow with the concurrency one for one.
  test('each worker pool holds the relay session, a claim, the lease renewal and a connection per 100 jobs in flight', async () => {
    for (const deployable of DEPLOYABLES.filter((candidate) => candidate.roles.includes('worker'))) {
      const name = workloadName(deployable, 'worker');
      const shape = await loadConfigShape(deployable.service);
      const deployment = objects.find((object): object is Deployment => object.kind === 'Deployment' && object.metadata.name === name)!;
      const app = deployment.spec.template.spec.containers.find((container) => container.name === 'app')!;
      const literals = Object.fromEntries(
        (app.env ?? [])
          .filter((variable) => variable.value !== undefined && variable.name in shape)
          .map((variable) => [variable.name, variable.value!]),
      );
      const concurrencyKey = Object.keys(shape).find((key) => key.endsWith('_WORKER_CONCURRENCY'))!;
      const concurrency = parseServiceConfig(
        { [concurrencyKey]: shape[concurrencyKey]! },
        { ...(literals[concurrencyKey] ? { [concurrencyKey]: literals[concurrencyKey] } : {}) },
      )[concurrencyKey] as number;
      expect({ name, concurrency, pool: pickPool(shape, literals) >= 3 + Math.ceil(concurrency / 100) }).toEqual({
        name,
        concurrency,
        pool: true,
      });
    }
  });
});

test('the budget check fails where the pools outgrow the database: the default pools of 10 do not fit dev', async () => {
  // dev as rendered, with every pool back at the services' default (10).
  const raised = render('k8s/overlays/dev').map((object) => {
    if (object.kind !== 'Deployment') return object;
    const copy = structuredClone(object) as Deployment;
    for (const container of copy.spec.template.spec.containers)
      container.env = container.env?.filter((variable) => variable.name !== 'DATABASE_POOL_MAX');
    return copy;
  });
  const { total } = await budget(raised);
  const { maxConnections, reserved } = clusterLimits(raised);
  expect(total + reserved + HEADROOM).toBeGreaterThan(maxConnections);
});
