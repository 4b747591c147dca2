// Every overlay under k8s/overlays, rendered by kustomize and checked offline: against the Kubernetes and operator
// schemas (with unknown fields refused), and against the services themselves — each container's environment is
// parsed by its service's config shape, ports and probes match what the service listens on and serves, the
// autoscalers watch the consumer groups the workers really join, and the network policies are evaluated flow by
// flow. Releases are rendered at two versions, as a pipeline would set them, to check that an upgrade applies.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { eventCatalog } from '@fin/events';
import { parse, parseDocument } from 'yaml';
import {
  DEPLOYABLES,
  REPO_ROOT,
  TEST_ONLY_VARIABLES,
  callsCustomerApis,
  envPrefix,
  loadConfigShape,
  parseServiceConfig,
  roleVariable,
  secretVariables,
  workloadName,
  type ConfigShape,
  type Deployable,
  type Role,
} from './support/deployables';
import { parseDockerfile } from './support/dockerfile';
import { MIGRATION_JOB, WAIT_FOR_SCHEMA } from './support/image-paths';
import {
  KUSTOMIZE,
  address,
  admits,
  allowed,
  pod,
  render,
  renderChanged,
  selects,
  type Endpoint,
  type K8sObject,
  type LabelSelector,
} from './support/kubernetes';

const OVERLAYS = readdirSync(path.join(REPO_ROOT, 'k8s/overlays')).map((name) => `k8s/overlays/${name}`);
const NAMESPACE = 'financial-intelligence';
const DEPLOYMENT_DOC = readFileSync(path.join(REPO_ROOT, 'docs/deployment.md'), 'utf8');

/** Each overlay as kustomize renders it, rendered once for the file (a render is seconds of CPU); a copy per caller. */
const RENDERED = new Map<string, K8sObject[]>();
function renderOverlay(overlay: string): K8sObject[] {
  if (!RENDERED.has(overlay)) RENDERED.set(overlay, render(overlay));
  return structuredClone(RENDERED.get(overlay)!);
}

/** Stand-ins for the values of Secrets, which live only in the cluster: valid for the config shapes. */
const SECRET_SAMPLES: Record<string, string> = {
  DATABASE_URL: 'postgresql://app:secret@fin-database-rw:5432/app',
  INTERNAL_SIGNING_SECRET: 'x'.repeat(64),
  PORTAL_SESSION_SECRET: 'y'.repeat(64),
  ANTHROPIC_API_KEY: 'sk-ant-placeholder-0000',
  FINNHUB_API_KEY: 'finnhub-placeholder',
  CUSTOMER_TOOLS_ENCRYPTION_KEY: `k2:${Buffer.alloc(32, 2).toString('base64')}`,
  CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
};

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    configMapKeyRef?: { name: string; key: string };
    secretKeyRef?: { name: string; key: string; optional?: boolean };
  };
}

interface Probe {
  httpGet?: { path: string; port: string | number };
}

interface Container {
  name: string;
  image: string;
  command?: string[];
  env?: EnvVar[];
  envFrom?: unknown[];
  ports?: { name?: string; containerPort: number }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    privileged?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  volumeMounts?: { name: string; mountPath: string }[];
}

interface PodSpec {
  containers: Container[];
  imagePullSecrets?: { name: string }[];
  initContainers?: Container[];
  volumes?: { name: string; emptyDir?: object }[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  automountServiceAccountToken?: boolean;
  topologySpreadConstraints?: { topologyKey: string; labelSelector?: LabelSelector }[];
}

interface Workload extends K8sObject {
  spec: {
    selector?: LabelSelector;
    ttlSecondsAfterFinished?: number;
    template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec };
  };
}

interface Deployed {
  name: string;
  deployable: Deployable;
  role: Role;
  object: Workload;
  labels: Record<string, string>;
  app: Container;
  shape: ConfigShape;
  /** The app container's environment, ConfigMap values resolved and Secrets replaced by samples. */
  env: Record<string, string>;
}

interface HttpRoute extends K8sObject {
  spec: {
    parentRefs: { kind?: string; name: string; namespace?: string }[];
    hostnames: string[];
    rules: { backendRefs: { kind?: string; name: string; port: number }[]; timeouts?: { request?: string } }[];
  };
}

const byKind = <T extends K8sObject>(objects: K8sObject[], kind: string) => objects.filter((object) => object.kind === kind) as T[];

const VERSION_LABEL = 'app.kubernetes.io/version';

/** What the overlay's release.yaml says: the ConfigMap fin-release, rendered. */
function releaseOf(objects: K8sObject[]): { version: string; host: string } {
  const release = objects.find(
    (object): object is K8sObject & { data: { version: string; host: string } } =>
      object.kind === 'ConfigMap' && object.metadata.name === 'fin-release',
  );
  if (!release) throw new Error('the overlay renders no ConfigMap fin-release (release.yaml)');
  return release.data;
}

/** An image reference's parts: `registry/path/name[:tag][@sha256:digest]`. */
function parseImage(image: string): { repository: string; tag?: string; digest?: string } {
  const match = /^(?<repository>[^@\s]+?)(?::(?<tag>\w[\w.-]{0,127}))?(?:@(?<digest>sha256:[0-9a-f]{64}))?$/.exec(image);
  if (!match?.groups) throw new Error(`not an image reference: ${image}`);
  const { repository = '', tag, digest } = match.groups;
  return { repository, ...(tag === undefined ? {} : { tag }), ...(digest === undefined ? {} : { digest }) };
}

/** Every container's image, init containers and the migration Job's included. */
function imagesOf(objects: K8sObject[]): { container: string; image: string }[] {
  return [...byKind<Workload>(objects, 'Deployment'), ...byKind<Workload>(objects, 'Job')].flatMap((object) =>
    [...(object.spec.template.spec.initContainers ?? []), ...object.spec.template.spec.containers].map((container) => ({
      container: `${object.kind}/${object.metadata.name} ${container.name}`,
      image: container.image,
    })),
  );
}

/** A container's environment with ConfigMap references resolved; Secret references become samples. */
function resolveEnv(container: Container, objects: K8sObject[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    const { configMapKeyRef, secretKeyRef } = variable.valueFrom ?? {};
    if (variable.value !== undefined) env[variable.name] = variable.value;
    else if (configMapKeyRef) {
      const configMap = objects.find(
        (object): object is K8sObject & { data?: Record<string, string> } =>
          object.kind === 'ConfigMap' && object.metadata.name === configMapKeyRef.name,
      );
      const value = configMap?.data?.[configMapKeyRef.key];
      if (value === undefined)
        throw new Error(
          `${container.name}: ${variable.name} refers to ConfigMap ${configMapKeyRef.name} key ${configMapKeyRef.key}, which the overlay does not render`,
        );
      env[variable.name] = value;
    } else if (secretKeyRef) {
      const sample = SECRET_SAMPLES[variable.name];
      if (sample === undefined) throw new Error(`${container.name}: no sample for the secret ${variable.name}`);
      env[variable.name] = sample;
    } else throw new Error(`${container.name}: ${variable.name} has neither a value nor a supported reference`);
  }
  return env;
}

/** Kubernetes quantities, enough to compare a request with its limit: cpu in cores, memory in bytes. */
function quantity(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti|k|M|G)?$/.exec(value);
  if (!match) throw new Error(`unexpected quantity ${value}`);
  const factor: Record<string, number> = { m: 0.001, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, k: 1e3, M: 1e6, G: 1e9 };
  return Number(match[1]) * (match[2] ? factor[match[2]]! : 1);
}

const runtimeUser = (() => {
  const runtime = parseDockerfile(path.join(REPO_ROOT, 'Dockerfile')).stages.at(-1)!;
  const user = runtime.instructions.find((instruction) => instruction.keyword === 'USER')!.args;
  return Number(user.split(':')[0]);
})();

test('kustomize is the pinned release', () => {
  expect(execFileSync(KUSTOMIZE, ['version'], { encoding: 'utf8' })).toContain(
    'Version:kustomize/v4.5.4 GitCommit:cf3a452ddd6f83945d39d582243b8592ec627ae3',
  );
});

test('there is a dev and a prod overlay', () => {
  expect([...OVERLAYS].sort()).toEqual(['k8s/overlays/dev', 'k8s/overlays/prod']);
});

describe.each(OVERLAYS)('%s', (overlay) => {
  let objects: K8sObject[];
  let deployed: Deployed[];
  let policies: K8sObject[];

  beforeAll(async () => {
    objects = renderOverlay(overlay);
    policies = byKind(objects, 'NetworkPolicy');
    deployed = [];
    for (const deployable of DEPLOYABLES) {
      const shape = await loadConfigShape(deployable.service);
      for (const role of deployable.roles) {
        const name = workloadName(deployable, role);
        const object = byKind<Workload>(objects, 'Deployment').find((deployment) => deployment.metadata.name === name);
        if (!object) throw new Error(`${overlay} renders no Deployment ${name}`);
        const app = object.spec.template.spec.containers.find((container) => container.name === 'app');
        if (!app) throw new Error(`${name} has no container named app`);
        deployed.push({
          name,
          deployable,
          role,
          object,
          labels: object.spec.template.metadata.labels,
          app,
          shape,
          env: resolveEnv(app, objects),
        });
      }
    }
  });

  const podOf = (name: string): Endpoint => {
    const { labels, app } = deployed.find((deployment) => deployment.name === name)!;
    return pod(name, NAMESPACE, labels, Object.fromEntries((app.ports ?? []).map((port) => [port.name ?? '', port.containerPort])));
  };
  const allPodSpecs = (): { name: string; spec: PodSpec; labels: Record<string, string> }[] =>
    [...byKind<Workload>(objects, 'Deployment'), ...byKind<Workload>(objects, 'Job')].map((object) => ({
      name: `${object.kind}/${object.metadata.name}`,
      spec: object.spec.template.spec,
      labels: object.spec.template.metadata.labels,
    }));

  test('renders objects valid against the Kubernetes and operator schemas, with no unknown field', () => {
    const output = execFileSync(process.execPath, [path.join(__dirname, 'support/validate-k8s.mjs')], {
      input: JSON.stringify(objects),
      encoding: 'utf8',
    });
    expect(JSON.parse(output)).toEqual([]);
  });

  test("puts every object in the application's namespace, which enforces the restricted Pod Security Standard", () => {
    const namespace = objects.find((object) => object.kind === 'Namespace')!;
    expect(namespace.metadata).toMatchObject({ name: NAMESPACE, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } });
    for (const object of objects)
      if (object.kind !== 'Namespace')
        expect(`${object.kind}/${object.metadata.name} in ${object.metadata.namespace}`).toBe(
          `${object.kind}/${object.metadata.name} in ${NAMESPACE}`,
        );
  });

  test('holds no Secret; docs/deployment.md names every Secret and key the manifests read', () => {
    expect(byKind(objects, 'Secret')).toEqual([]);
    const references = new Set<string>();
    for (const { spec } of allPodSpecs()) {
      for (const container of [...(spec.initContainers ?? []), ...spec.containers]) {
        for (const variable of container.env ?? []) {
          const ref = variable.valueFrom?.secretKeyRef;
          if (ref) references.add(`${ref.name} ${ref.key}`);
        }
      }
    }
    expect(references.size).toBeGreaterThan(0);
    for (const reference of references) {
      const [name, key] = reference.split(' ') as [string, string];
      expect({ reference, documented: DEPLOYMENT_DOC.includes(`\`${name}\``) && DEPLOYMENT_DOC.includes(`\`${key}\``) }).toEqual({
        reference,
        documented: true,
      });
    }
  });

  test("runs every role of every deployable as a Deployment of the service's image, pinned to a release", () => {
    const names = deployed.map((deployment) => deployment.name).sort();
    expect(
      byKind(objects, 'Deployment')
        .map((object) => object.metadata.name)
        .sort(),
    ).toEqual(names);
    for (const { name, deployable, role, object, labels, app } of deployed) {
      expect({ name, labels }).toMatchObject({
        name,
        labels: {
          'app.kubernetes.io/name': deployable.service,
          'app.kubernetes.io/component': deployable.service === 'gateway' ? 'gateway' : role === 'worker' ? 'worker' : 'api',
        },
      });
      expect(selects(object.spec.selector, labels)).toBe(true);
      const image = parseImage(app.image);
      expect({ name, image: image.repository.split('/').at(-1), pinned: image.digest ?? image.tag }).toEqual({
        name,
        image: deployable.service,
        pinned: expect.any(String),
      });
      expect(image.tag).not.toBe('latest');
      for (const init of object.spec.template.spec.initContainers ?? [])
        expect({ name, image: init.image }).toEqual({ name, image: app.image });
    }
  });

  test('gives every container an environment its service accepts, naming nothing the service does not read', () => {
    for (const { name, app, env, shape, role, deployable } of deployed) {
      expect({ name, envFrom: app.envFrom }).toEqual({ name, envFrom: undefined });
      expect({ name, unknown: Object.keys(env).filter((key) => !(key in shape)) }).toEqual({ name, unknown: [] });
      const config = parseServiceConfig(shape, env);
      const roleVar = roleVariable(shape, deployable.service);
      if (roleVar) expect({ name, role: config[roleVar] }).toEqual({ name, role });
      if (role === 'api') expect({ name, host: config.HOST }).toEqual({ name, host: '0.0.0.0' });
      // Environments share a cluster only under a topic prefix the autoscalers would have to know: none here.
      expect({ name, prefix: env.KAFKA_TOPIC_PREFIX }).toEqual({ name, prefix: undefined });
      // What the service's config marks as a secret comes from a Secret, never from a literal or a ConfigMap.
      const fromLiterals = (app.env ?? []).filter(
        (variable) => secretVariables(shape).includes(variable.name) && variable.valueFrom?.secretKeyRef === undefined,
      );
      expect({ name, secretsNotFromSecrets: fromLiterals.map((variable) => variable.name) }).toEqual({ name, secretsNotFromSecrets: [] });
    }
  });

  test('sets no test-only variable anywhere: customer tools never reach loopback addresses in a cluster', () => {
    // Not in any container, ConfigMap, patch or annotation of the rendered overlay, whatever route it would take.
    const rendered = JSON.stringify(objects);
    for (const variable of TEST_ONLY_VARIABLES) expect({ variable, set: rendered.includes(variable) }).toEqual({ variable, set: false });
    for (const { name, env, shape } of deployed) {
      if ('CUSTOMER_TOOLS_ALLOW_LOOPBACK' in shape)
        expect({ name, loopback: parseServiceConfig(shape, env).CUSTOMER_TOOLS_ALLOW_LOOPBACK }).toEqual({ name, loopback: false });
    }
  });

  test('gives the portal its own session secret from the Secret, and no other workload', () => {
    for (const { name, app } of deployed) {
      const session = app.env?.find((entry) => entry.name === 'PORTAL_SESSION_SECRET')?.valueFrom;
      expect({ name, session }).toEqual({
        name,
        session: name === 'portal' ? { secretKeyRef: { name: 'fin-secrets', key: 'PORTAL_SESSION_SECRET' } } : undefined,
      });
    }
  });

  test('gives the portal and every product service the one customer-tools key, from the Secret, with the previous keys for rotation', () => {
    const holders = deployed.filter(({ shape }) => 'CUSTOMER_TOOLS_ENCRYPTION_KEY' in shape);
    expect(holders.map((holder) => holder.name)).toEqual(
      expect.arrayContaining(['portal', 'news-worker', 'stock-report-worker', 'analysis-api', 'analysis-worker', 'chat']),
    );
    for (const { name, app } of holders) {
      const ref = (variable: string) => app.env?.find((entry) => entry.name === variable)?.valueFrom;
      // Required: a missing key stops the pod from starting (CreateContainerConfigError) instead of running without it.
      expect({ name, current: ref('CUSTOMER_TOOLS_ENCRYPTION_KEY') }).toEqual({
        name,
        current: { secretKeyRef: { name: 'fin-secrets', key: 'CUSTOMER_TOOLS_ENCRYPTION_KEY' } },
      });
      // Optional: only set while a rotation is under way.
      expect({ name, previous: ref('CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS') }).toEqual({
        name,
        previous: { secretKeyRef: { name: 'fin-secrets', key: 'CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS', optional: true } },
      });
    }
  });

  test("reads SEC EDGAR where filings are read: EDGAR itself, with the operator's User-Agent from fin-config, and the egress label", () => {
    // The stock-report service's filings routes and figures; the sec_filings tool of news and analysis runs, in the
    // pods that run the engine (the news API has none).
    const readers = deployed.filter(({ app }) => app.env?.some((entry) => entry.name === 'EDGAR_USER_AGENT'));
    expect(readers.map((reader) => reader.name).sort()).toEqual([
      'analysis-api',
      'analysis-worker',
      'news-worker',
      'stock-report-api',
      'stock-report-worker',
    ]);
    for (const { name, app, env, labels } of readers) {
      const entry = (variable: string) => app.env?.find((found) => found.name === variable);
      expect({ name, offline: entry('EDGAR_OFFLINE')?.value, userAgent: entry('EDGAR_USER_AGENT')?.valueFrom }).toEqual({
        name,
        offline: 'false',
        // fin-config under the name kustomize's generator gives it (its content's hash appended).
        userAgent: { configMapKeyRef: { name: expect.stringMatching(/^fin-config(-[a-z0-9]+)?$/) as unknown, key: 'EDGAR_USER_AGENT' } },
      });
      expect({ name, userAgent: env.EDGAR_USER_AGENT }).toEqual({ name, userAgent: expect.stringMatching(/\S+@\S+\.\S+/) as unknown });
      expect({ name, label: labels['fin/egress-edgar'] }).toEqual({ name, label: 'true' });
    }
    // Every other pod whose config reads EDGAR would read the bundled sample: none runs the engine or the filings routes.
    for (const { name, shape, env } of deployed)
      if ('EDGAR_USER_AGENT' in shape && !readers.some((reader) => reader.name === name))
        expect({ name, model: env.ANTHROPIC_API_KEY, offline: env.EDGAR_OFFLINE }).toEqual({ name, model: undefined, offline: undefined });
  });

  test('listens where it is probed: APIs expose PORT as "http" and probe /healthz and /readyz there; workers serve only the metrics listener, probed at its /healthz', () => {
    for (const { name, role, app, env, shape } of deployed) {
      const config = parseServiceConfig(shape, env);
      const ports = app.ports?.filter((port) => port.name !== 'metrics');
      if (role === 'api') {
        expect({ name, ports }).toEqual({ name, ports: [{ name: 'http', containerPort: config.PORT }] });
        expect({
          name,
          startup: app.startupProbe?.httpGet,
          liveness: app.livenessProbe?.httpGet,
          readiness: app.readinessProbe?.httpGet,
        }).toEqual({
          name,
          startup: { path: '/healthz', port: 'http' },
          liveness: { path: '/healthz', port: 'http' },
          readiness: { path: '/readyz', port: 'http' },
        });
      } else {
        // No API: the metrics listener (which answers GET /healthz) is the only port, and where liveness is asked.
        expect({ name, metrics: 'METRICS_PORT' in shape }).toEqual({ name, metrics: true });
        expect({
          name,
          ports: ports?.length ? ports : undefined,
          metricsPort: app.ports?.find((port) => port.name === 'metrics')?.containerPort,
        }).toEqual({
          name,
          ports: undefined,
          metricsPort: config.METRICS_PORT,
        });
        expect({ name, startup: app.startupProbe?.httpGet, liveness: app.livenessProbe?.httpGet, readiness: app.readinessProbe }).toEqual({
          name,
          startup: { path: '/healthz', port: 'metrics' },
          liveness: { path: '/healthz', port: 'metrics' },
          readiness: undefined,
        });
      }
    }
  });

  test('exposes the metrics listener of every process, on all interfaces, for Prometheus to scrape', () => {
    for (const { name, app, env, shape, object } of deployed) {
      const metricsPort = app.ports?.find((port) => port.name === 'metrics');
      // Every process has one (docs/observability.md); the worker roles' probes depend on it.
      expect({ name, metricsListener: 'METRICS_PORT' in shape && 'METRICS_HOST' in shape }).toEqual({ name, metricsListener: true });
      const config = parseServiceConfig(shape, env);
      expect({ name, host: config.METRICS_HOST, port: metricsPort?.containerPort }).toEqual({
        name,
        host: '0.0.0.0',
        port: config.METRICS_PORT,
      });
      expect({ name, annotations: object.spec.template.metadata.annotations }).toEqual({
        name,
        annotations: {
          'prometheus.io/scrape': 'true',
          'prometheus.io/port': String(config.METRICS_PORT),
          'prometheus.io/path': '/metrics',
        },
      });
    }
  });

  test('routes the gateway to every API through its Service, at the port the API listens on', () => {
    const gateway = deployed.find((deployment) => deployment.name === 'gateway')!;
    const services = byKind<
      K8sObject & { spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] } }
    >(objects, 'Service');
    const apis = deployed.filter((deployment) => deployment.role === 'api' && deployment.name !== 'gateway');
    const urls = Object.keys(gateway.env).filter((key) => key.endsWith('_URL') && key !== 'DATABASE_URL');
    expect(urls.sort()).toEqual(apis.map((api) => `${envPrefix(api.deployable.service)}_URL`).sort());
    for (const api of apis) {
      const url = new URL(gateway.env[`${envPrefix(api.deployable.service)}_URL`]!);
      const service = services.find((candidate) => candidate.metadata.name === url.hostname.split('.')[0]);
      expect({ api: api.name, service: service?.metadata.name }).toEqual({ api: api.name, service: api.name });
      const port = service!.spec.ports.find((candidate) => candidate.port === Number(url.port));
      expect({ api: api.name, targetPort: port?.targetPort }).toEqual({ api: api.name, targetPort: 'http' });
      const targets = deployed.filter((deployment) => selects({ matchLabels: service!.spec.selector }, deployment.labels));
      expect(targets.map((target) => target.name)).toEqual([api.name]);
    }
  });

  test("exposes only the gateway outside the cluster: one HTTPRoute on a named Gateway, to the gateway's Service; no Ingress; every Service internal", () => {
    expect(byKind(objects, 'Ingress')).toEqual([]);
    const routes = byKind<HttpRoute>(objects, 'HTTPRoute');
    expect(routes).toHaveLength(1);
    const [route] = routes;
    expect(route!.spec.parentRefs).toEqual([
      expect.objectContaining({ kind: 'Gateway', name: expect.any(String), namespace: expect.any(String) }),
    ]);
    const service = byKind<K8sObject & { spec: { ports: { port: number; targetPort: string }[] } }>(objects, 'Service').find(
      (candidate) => candidate.metadata.name === 'gateway',
    )!;
    const backends = route!.spec.rules.flatMap((rule) => rule.backendRefs);
    expect(backends).toEqual([
      { kind: 'Service', name: 'gateway', port: service.spec.ports.find((port) => port.targetPort === 'http')!.port },
    ]);
    // Event streams stay open far longer than a proxy's default request timeout.
    for (const rule of route!.spec.rules) expect(rule.timeouts?.request).toBe('1h');
    for (const entry of byKind<K8sObject & { spec: { type?: string } }>(objects, 'Service'))
      expect({ service: entry.metadata.name, type: entry.spec.type ?? 'ClusterIP' }).toEqual({
        service: entry.metadata.name,
        type: 'ClusterIP',
      });
  });

  test("migrates with the image's runner in a Job, and keeps every pod waiting until the schema is there", () => {
    const jobs = byKind<Workload>(objects, 'Job');
    expect(jobs.map((job) => job.metadata.name)).toEqual([`migrate-${releaseOf(objects).version}`]);
    const [migrate] = jobs[0]!.spec.template.spec.containers;
    const gateway = deployed.find((deployment) => deployment.name === 'gateway')!;
    const databaseRef = gateway.app.env?.find((variable) => variable.name === 'DATABASE_URL')?.valueFrom;
    // Forward-only: a database at this release or a newer one is left as it is (image.test.ts runs the command).
    expect(migrate).toMatchObject({
      command: MIGRATION_JOB,
      image: gateway.app.image,
      env: [
        { name: 'DATABASE_URL', valueFrom: databaseRef },
        { name: 'SCHEMA_WAIT_TIMEOUT_S', value: '1' },
      ],
    });
    for (const { name, object, app, shape } of deployed) {
      const inits = object.spec.template.spec.initContainers ?? [];
      // A service without a database (the MCP server) has nothing to wait for.
      if (!('DATABASE_URL' in shape)) {
        expect({ name, inits, database: app.env?.find((variable) => variable.name === 'DATABASE_URL') }).toEqual({
          name,
          inits: [],
          database: undefined,
        });
        continue;
      }
      expect({ name, inits: inits.map((init) => ({ name: init.name, command: init.command, env: init.env })) }).toEqual({
        name,
        inits: [
          {
            name: 'wait-for-schema',
            command: WAIT_FOR_SCHEMA,
            env: [{ name: 'DATABASE_URL', valueFrom: app.env?.find((variable) => variable.name === 'DATABASE_URL')?.valueFrom }],
          },
        ],
      });
      expect(app.env?.find((variable) => variable.name === 'DATABASE_URL')?.valueFrom).toEqual(databaseRef);
    }
  });

  test('names the migration Job after the release, and makes it a hook for Argo CD and replaceable for Flux', () => {
    const [job, ...others] = byKind<Workload>(objects, 'Job');
    expect(others).toEqual([]);
    // An overlay that brings its own database (a CloudNativePG Cluster) migrates in the Sync phase that creates it:
    // a PreSync hook would wait for a database the first sync has not created yet.
    const ownDatabase = objects.some((object) => object.kind === 'Cluster');
    expect(job!.metadata.annotations).toEqual({
      'argocd.argoproj.io/hook': ownDatabase ? 'Sync' : 'PreSync',
      'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation',
      'kustomize.toolkit.fluxcd.io/force': 'enabled',
    });
    // Finished Jobs go away on their own; a release's Job is a new one, so nothing waits for that.
    expect(job!.spec.ttlSecondsAfterFinished).toBeGreaterThan(0);
    // A PreSync hook runs before the first sync creates the application's ServiceAccount: the namespace's own.
    expect(job!.spec.template.spec).toMatchObject({ serviceAccountName: 'default', automountServiceAccountToken: false });
  });

  test("carries release.yaml's version in every image (its tag, or a digest in its place), the version label and FIN_VERSION", () => {
    const { version } = releaseOf(objects);
    // A label value, and the end of the Job's name (migrate-<version>, at most 63 characters).
    expect(version).toMatch(/^[a-z0-9]([a-z0-9.-]{0,53}[a-z0-9])?$/);
    for (const { name, object, labels, env } of deployed)
      expect({ name, label: object.metadata.labels?.[VERSION_LABEL], podLabel: labels[VERSION_LABEL], env: env.FIN_VERSION }).toEqual({
        name,
        label: version,
        podLabel: version,
        env: version,
      });
    const job = byKind<Workload>(objects, 'Job')[0]!;
    expect([job.metadata.labels?.[VERSION_LABEL], job.spec.template.metadata.labels[VERSION_LABEL]]).toEqual([version, version]);
    for (const { container, image } of imagesOf(objects)) {
      const { tag, digest } = parseImage(image);
      expect({ container, image, carriesVersion: digest !== undefined || tag === version }).toEqual({
        container,
        image,
        carriesVersion: true,
      });
    }
  });

  test('serves the public host of release.yaml', () => {
    const [route] = byKind<HttpRoute>(objects, 'HTTPRoute');
    expect(route!.spec.hostnames).toEqual([releaseOf(objects).host]);
  });

  test('lets the services create missing topics only outside prod, where Strimzi KafkaTopics own them', () => {
    const expected = overlay === 'k8s/overlays/prod' ? 'false' : 'true';
    const config = objects.find(
      (object): object is K8sObject & { data: Record<string, string> } =>
        object.kind === 'ConfigMap' && object.metadata.name.startsWith('fin-config'),
    );
    expect(config?.data.KAFKA_ENSURE_TOPICS).toBe(expected);
    const clients = deployed.filter(({ env }) => env.KAFKA_BROKERS !== undefined);
    expect(clients.length).toBeGreaterThan(0);
    for (const { name, env, shape } of clients)
      if ('KAFKA_ENSURE_TOPICS' in shape)
        expect({ name, ensureTopics: parseServiceConfig(shape, env).KAFKA_ENSURE_TOPICS }).toEqual({
          name,
          ensureTopics: expected === 'true',
        });
  });

  test('hardens every pod: non-root, no privilege escalation or capabilities, RuntimeDefault seccomp, read-only root with /tmp in an emptyDir, no API token', () => {
    for (const { name, spec } of allPodSpecs()) {
      expect({ name, pod: spec.securityContext }).toMatchObject({
        name,
        pod: { runAsNonRoot: true, runAsUser: runtimeUser, seccompProfile: { type: 'RuntimeDefault' } },
      });
      expect({ name, token: spec.automountServiceAccountToken }).toEqual({ name, token: false });
      const emptyDirs = new Set((spec.volumes ?? []).filter((volume) => volume.emptyDir).map((volume) => volume.name));
      for (const container of [...(spec.initContainers ?? []), ...spec.containers]) {
        const id = `${name} ${container.name}`;
        expect({ id, security: container.securityContext }).toEqual({
          id,
          security: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
        });
        const tmp = container.volumeMounts?.find((mount) => mount.mountPath === '/tmp');
        expect({ id, tmpIsEmptyDir: tmp !== undefined && emptyDirs.has(tmp.name) }).toEqual({ id, tmpIsEmptyDir: true });
      }
    }
  });

  test('sets CPU and memory requests and limits on every container, each request within its limit', () => {
    for (const { name, spec } of allPodSpecs()) {
      for (const container of [...(spec.initContainers ?? []), ...spec.containers]) {
        for (const resource of ['cpu', 'memory']) {
          const request = container.resources?.requests?.[resource];
          const limit = container.resources?.limits?.[resource];
          const id = `${name} ${container.name} ${resource}`;
          expect({ id, request: typeof request, limit: typeof limit }).toEqual({ id, request: 'string', limit: 'string' });
          expect({ id, withinLimit: quantity(request!) <= quantity(limit!) }).toEqual({ id, withinLimit: true });
        }
      }
    }
  });

  test('spreads every Deployment over zones and nodes', () => {
    for (const { name, object, labels } of deployed) {
      const constraints = object.spec.template.spec.topologySpreadConstraints ?? [];
      expect({ name, keys: constraints.map((constraint) => constraint.topologyKey).sort() }).toEqual({
        name,
        keys: ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'],
      });
      for (const constraint of constraints)
        expect({ name, selectsItsPods: selects(constraint.labelSelector, labels) }).toEqual({ name, selectsItsPods: true });
    }
  });

  test('gives every Deployment a disruption budget of its own', () => {
    const budgets = byKind<K8sObject & { spec: { selector: LabelSelector; maxUnavailable?: number } }>(objects, 'PodDisruptionBudget');
    for (const { name, labels } of deployed) {
      const own = budgets.filter((budget) => selects(budget.spec.selector, labels));
      expect({ name, budgets: own.length }).toEqual({ name, budgets: 1 });
      const covered = deployed.filter((other) => selects(own[0]!.spec.selector, other.labels)).map((other) => other.name);
      expect({ name, covered }).toEqual({ name, covered: [name] });
    }
  });

  test('scales APIs on CPU and workers with KEDA on their jobs in PostgreSQL, counted as their config claims them', () => {
    const hpas = byKind<K8sObject & { spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number } }>(
      objects,
      'HorizontalPodAutoscaler',
    );
    const scaled = byKind<
      K8sObject & {
        spec: {
          scaleTargetRef: { name: string };
          minReplicaCount: number;
          maxReplicaCount: number;
          triggers: { type: string; useCachedMetrics?: boolean; metadata: Record<string, string> }[];
        };
      }
    >(objects, 'ScaledObject');
    const apis = deployed
      .filter((deployment) => deployment.role === 'api')
      .map((deployment) => deployment.name)
      .sort();
    const workers = deployed.filter((deployment) => deployment.role === 'worker');
    expect(hpas.map((hpa) => `${hpa.spec.scaleTargetRef.kind}/${hpa.spec.scaleTargetRef.name}`).sort()).toEqual(
      apis.map((name) => `Deployment/${name}`),
    );
    for (const hpa of hpas) expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
    expect(scaled.map((object) => object.spec.scaleTargetRef.name).sort()).toEqual(workers.map((worker) => worker.name).sort());
    for (const worker of workers) {
      const object = scaled.find((candidate) => candidate.spec.scaleTargetRef.name === worker.name)!;
      const jobType = worker.deployable.jobType!;
      // Scaled on the worker's jobs in PostgreSQL (docs/deployment.md, "What the workers scale on"), not Kafka lag.
      expect(object.spec.triggers).toHaveLength(1);
      const [trigger] = object.spec.triggers;
      expect({ worker: worker.name, type: trigger!.type, cached: trigger!.useCachedMetrics }).toEqual({
        worker: worker.name,
        type: 'postgresql',
        cached: true,
      });
      // The connection is the worker's own DATABASE_URL: the database it claims its jobs from.
      const variable = trigger!.metadata.connectionFromEnv ?? '';
      expect(worker.app.env?.find((entry) => entry.name === variable)?.valueFrom).toEqual(
        worker.app.env?.find((entry) => entry.name === 'DATABASE_URL')?.valueFrom,
      );
      expect(variable).toBe('DATABASE_URL');
      // The query counts this worker's job type, each tenant up to the worker's tenant cap; the target is the jobs
      // one replica holds, both as the worker's config says (its defaults, unless the Deployment sets them).
      const prefix = jobType.toUpperCase().replace(/-/g, '_');
      const config = parseServiceConfig(worker.shape, worker.env);
      const query = trigger!.metadata.query ?? '';
      expect(query).toContain(`type = '${jobType}'`);
      expect(query).toContain("status IN ('pending', 'running')");
      expect(query).toContain('GROUP BY tenant_id');
      expect({ worker: worker.name, cap: /least\(n, (\d+)\)/.exec(query)?.[1], target: trigger!.metadata.targetQueryValue }).toEqual({
        worker: worker.name,
        cap: String(config[`${prefix}_WORKER_TENANT_CAP`]),
        target: String(config[`${prefix}_WORKER_CONCURRENCY`]),
      });
      expect(object.spec.minReplicaCount).toBeLessThanOrEqual(object.spec.maxReplicaCount);
    }
  });

  test('declares every catalog topic and its dead-letter topic for the Strimzi cluster the services connect to', () => {
    const topics = byKind<
      K8sObject & { spec: { topicName: string; partitions: number; replicas: number; config?: Record<string, unknown> } }
    >(objects, 'KafkaTopic');
    const expected = Object.values(eventCatalog).flatMap((topic) => [topic.name, topic.deadLetterTopic]);
    expect(topics.map((topic) => topic.spec.topicName).sort()).toEqual([...expected].sort());
    const clusters = new Set(topics.map((topic) => topic.metadata.labels?.['strimzi.io/cluster']));
    expect(clusters.size).toBe(1);
    const [cluster] = clusters;
    for (const topic of topics) {
      // acks=all writes fail when fewer replicas exist than must acknowledge.
      expect({ topic: topic.spec.topicName, fits: Number(topic.spec.config?.['min.insync.replicas'] ?? 1) <= topic.spec.replicas }).toEqual(
        { topic: topic.spec.topicName, fits: true },
      );
    }
    // Strimzi names the bootstrap Service <cluster>-kafka-bootstrap, in the namespace the Kafka policy lets pods reach.
    const kafkaPolicy = policies.find((policy) => policy.metadata.name === 'kafka-egress') as K8sObject & {
      spec: { egress: { to: { namespaceSelector: LabelSelector }[] }[] };
    };
    const kafkaNamespace = kafkaPolicy.spec.egress[0]!.to[0]!.namespaceSelector.matchLabels!['kubernetes.io/metadata.name'];
    for (const { name, env } of deployed)
      if (env.KAFKA_BROKERS !== undefined)
        expect({ name, brokers: env.KAFKA_BROKERS }).toEqual({ name, brokers: `${cluster}-kafka-bootstrap.${kafkaNamespace}.svc:9092` });
  });

  describe('network policies', () => {
    /** The Gateway's data plane (the base's HTTPRoute's parent): the one way in from outside. */
    const ingressController = pod('envoy-public', 'gateway-system', { 'app.kubernetes.io/name': 'envoy' });
    const elsewhere = pod('a pod of another application', 'default', { app: 'other' });
    const stranger = pod('an unlabelled pod in the namespace', NAMESPACE, {});
    const dns = pod('kube-dns', 'kube-system', { 'k8s-app': 'kube-dns' });
    const broker = pod('fin-kafka-broker-0', 'kafka', { 'strimzi.io/cluster': 'fin-kafka' });
    const internet = address('api.anthropic.com', '160.79.104.10');
    const customerApi = address("a customer's API", '93.184.215.14');
    const customerApiV6 = address("a customer's API over IPv6", '2606:2800:21f:cb07:6820:80da:af6b:8b2c');
    const privateAddress = address('something in the VPC', '10.1.2.3');
    /** What no pod may reach on 443: private, shared and link-local ranges (the cloud metadata service), IPv6 unique-local. */
    const nonPublic = [
      privateAddress,
      address('the cloud metadata service', '169.254.169.254'),
      address('a node in 172.16/12', '172.20.1.1'),
      address('a home network', '192.168.1.10'),
      address('a CGNAT address', '100.64.1.1'),
      address('a benchmarking address', '198.18.0.1'),
      address("EC2's IPv6 metadata service", 'fd00:ec2::254'),
      address('an IPv6 unique-local address', 'fd12:3456::1'),
      address('an IPv6 documentation address', '2001:db8::1'),
    ];

    /** PostgreSQL as the overlay provides it: CloudNativePG's pods in the namespace, or a managed database's address. */
    const database = (): Endpoint => {
      const cluster = objects.find((object) => object.kind === 'Cluster');
      return cluster
        ? pod('fin-database-1', NAMESPACE, { 'cnpg.io/cluster': cluster.metadata.name }, { postgresql: 5432 })
        : address('managed PostgreSQL', '10.20.0.5');
    };
    const portOf = (name: string, portName: string) =>
      deployed.find((deployment) => deployment.name === name)!.app.ports?.find((port) => port.name === portName)?.containerPort;
    const apiPort = (name: string) => portOf(name, 'http')!;
    const prometheus = pod('prometheus-0', 'monitoring', { 'app.kubernetes.io/name': 'prometheus' });

    test('deny by default: a pod nothing else admits reaches nothing but DNS, and nothing reaches it', () => {
      // Stated on its own, not only as the sum of the other policies: a policy selecting every pod, with no rule.
      expect(
        policies.filter(
          (policy) => JSON.stringify(policy.spec) === JSON.stringify({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] }),
        ),
      ).toHaveLength(1);
      expect(allowed(policies, stranger, dns, 53, 'UDP')).toBe(true);
      expect(allowed(policies, stranger, internet, 443)).toBe(false);
      expect(allowed(policies, stranger, broker, 9092)).toBe(false);
      expect(allowed(policies, podOf('gateway'), stranger, 8080)).toBe(false);
      expect(allowed(policies, ingressController, stranger, 8080)).toBe(false);
    });

    test("only the Gateway's proxies reach the gateway from outside, and only on its port", () => {
      expect(allowed(policies, ingressController, podOf('gateway'), apiPort('gateway'))).toBe(true);
      expect(allowed(policies, ingressController, podOf('gateway'), 9999)).toBe(false);
      expect(allowed(policies, elsewhere, podOf('gateway'), apiPort('gateway'))).toBe(false);
    });

    test('only the gateway reaches the APIs, and the APIs admit no one else even where egress would let them', () => {
      for (const { name, role } of deployed) {
        if (role !== 'api' || name === 'gateway') continue;
        expect({ name, fromGateway: allowed(policies, podOf('gateway'), podOf(name), apiPort(name)) }).toEqual({ name, fromGateway: true });
        expect({ name, fromIngress: allowed(policies, ingressController, podOf(name), apiPort(name)) }).toEqual({
          name,
          fromIngress: false,
        });
        expect({ name, fromElsewhere: allowed(policies, elsewhere, podOf(name), apiPort(name)) }).toEqual({ name, fromElsewhere: false });
        expect({ name, admitsStranger: admits(policies, podOf(name), stranger, apiPort(name)) }).toEqual({ name, admitsStranger: false });
        for (const other of deployed) {
          if (other.name === 'gateway' || other.name === name) continue;
          expect({ from: other.name, to: name, allowed: allowed(policies, podOf(other.name), podOf(name), apiPort(name)) }).toEqual({
            from: other.name,
            to: name,
            allowed: false,
          });
          expect({ from: other.name, to: name, admitted: admits(policies, podOf(name), podOf(other.name), apiPort(name)) }).toEqual({
            from: other.name,
            to: name,
            admitted: false,
          });
        }
      }
    });

    test('the MCP server reaches the gateway (its tools call the API) and nothing else; no other pod reaches the gateway', () => {
      const mcp = podOf('mcp');
      expect(allowed(policies, mcp, podOf('gateway'), apiPort('gateway'))).toBe(true);
      expect(allowed(policies, mcp, podOf('gateway'), portOf('gateway', 'metrics')!)).toBe(false);
      expect(allowed(policies, podOf('gateway'), mcp, apiPort('mcp'))).toBe(true);
      expect(allowed(policies, mcp, database(), 5432)).toBe(false);
      expect(allowed(policies, mcp, broker, 9092)).toBe(false);
      expect(allowed(policies, mcp, internet, 443)).toBe(false);
      for (const { name } of deployed) {
        if (name === 'gateway' || name === 'mcp') continue;
        expect({ to: name, allowed: allowed(policies, mcp, podOf(name), apiPort(name)) }).toEqual({ to: name, allowed: false });
        expect({ from: name, allowed: allowed(policies, podOf(name), podOf('gateway'), apiPort('gateway')) }).toEqual({
          from: name,
          allowed: false,
        });
      }
    });

    test('Prometheus reaches every metrics listener; nothing else does, and Prometheus nothing but them', () => {
      for (const { name } of deployed) {
        const metrics = portOf(name, 'metrics');
        expect({ name, metrics: typeof metrics }).toEqual({ name, metrics: 'number' });
        if (metrics === undefined) continue;
        expect({ name, prometheus: allowed(policies, prometheus, podOf(name), metrics) }).toEqual({ name, prometheus: true });
        expect({ name, ingress: allowed(policies, ingressController, podOf(name), metrics) }).toEqual({ name, ingress: false });
        if (name !== 'gateway')
          expect({ name, gateway: allowed(policies, podOf('gateway'), podOf(name), metrics) }).toEqual({ name, gateway: false });
        expect({ name, stranger: allowed(policies, stranger, podOf(name), metrics) }).toEqual({ name, stranger: false });
      }
      for (const { name, role } of deployed)
        if (role === 'api')
          expect({ name, prometheusToApi: allowed(policies, prometheus, podOf(name), apiPort(name)) }).toEqual({
            name,
            prometheusToApi: false,
          });
    });

    test("every pod reaches DNS, and PostgreSQL when it has a database; Kafka, the Anthropic API and customers' APIs only the pods that call them", () => {
      for (const { name, env, deployable, labels } of deployed) {
        const self = podOf(name);
        const callsModel = env.ANTHROPIC_API_KEY !== undefined;
        const callsCustomers = callsCustomerApis(deployable, env);
        // SEC EDGAR: where its User-Agent is set (the stock-report service, the news worker, both analysis roles).
        const callsEdgar = env.EDGAR_USER_AGENT !== undefined;
        expect({ name, dns: allowed(policies, self, dns, 53, 'UDP') }).toEqual({ name, dns: true });
        expect({ name, postgres: allowed(policies, self, database(), 5432) }).toEqual({ name, postgres: env.DATABASE_URL !== undefined });
        expect({ name, kafka: allowed(policies, self, broker, 9092) }).toEqual({ name, kafka: env.KAFKA_BROKERS !== undefined });
        // Each egress is asked for by its own label, so a pod's labels say what it talks to.
        expect({ name, anthropicLabel: labels['fin/egress-anthropic'], customerApisLabel: labels['fin/egress-customer-apis'] }).toEqual({
          name,
          anthropicLabel: callsModel ? 'true' : undefined,
          customerApisLabel: callsCustomers ? 'true' : undefined,
        });
        // A pod that reads EDGAR asks for it by its own label, also where the model's egress would cover it.
        expect({ name, edgarLabel: labels['fin/egress-edgar'] }).toEqual({ name, edgarLabel: callsEdgar ? 'true' : undefined });
        expect({ name, anthropic: allowed(policies, self, internet, 443) }).toEqual({
          name,
          anthropic: callsModel || callsCustomers || callsEdgar,
        });
        expect({ name, customerApi: allowed(policies, self, customerApi, 443) }).toEqual({
          name,
          customerApi: callsModel || callsCustomers || callsEdgar,
        });
        expect({ name, customerApiV6: allowed(policies, self, customerApiV6, 443) }).toEqual({ name, customerApiV6: callsCustomers });
        // HTTPS only: a customer's endpoint on another port, or plain http, is not reached.
        expect({
          name,
          otherPort: allowed(policies, self, customerApi, 8443),
          plainHttp: allowed(policies, self, customerApi, 80),
        }).toEqual({ name, otherPort: false, plainHttp: false });
        for (const target of nonPublic)
          expect({ name, to: target.name, allowed: allowed(policies, self, target, 443) }).toEqual({
            name,
            to: target.name,
            allowed: false,
          });
      }
      // The pods calling customers' APIs: the portal (its test button), the product workers, analysis-api (streamed
      // analyses) and chat.
      expect(deployed.filter(({ deployable, env }) => callsCustomerApis(deployable, env)).map((deployment) => deployment.name)).toEqual(
        expect.arrayContaining(['analysis-api', 'analysis-worker', 'chat', 'news-worker', 'portal', 'stock-report-worker']),
      );
      const job = byKind<Workload>(objects, 'Job')[0]!;
      const migration = pod('migrate', NAMESPACE, job.spec.template.metadata.labels);
      expect(allowed(policies, migration, database(), 5432)).toBe(true);
      expect(allowed(policies, migration, internet, 443)).toBe(false);
    });
  });
});

describe('releases', () => {
  const VERSIONS = ['0.1.0', '0.2.0'] as const;
  /** The digest a pipeline would have pushed for an image at a version: any sha256 in the right format. */
  const digestOf = (repository: string, version: string) =>
    `sha256:${createHash('sha256').update(`${repository}:${version}`).digest('hex')}`;

  /**
   * The overlay at a version, set as docs/deployment.md says a release does: release.yaml's version, and where the
   * overlay pins digests, each image's new digest with `kustomize edit set image`.
   */
  function atVersion(overlay: string, version: string): K8sObject[] {
    return renderChanged(overlay, (copy) => {
      const release = parseDocument(copy.read('release.yaml'));
      release.setIn(['data', 'version'], version);
      copy.write('release.yaml', release.toString());
      const { images = [] } = parse(copy.read('kustomization.yaml')) as { images?: { name: string; newName?: string; digest?: string }[] };
      for (const { name, newName = name, digest } of images)
        if (digest !== undefined) copy.kustomize('edit', 'set', 'image', `${name}=${newName}@${digestOf(newName, version)}`);
    });
  }

  test('prod pins every image by digest', () => {
    for (const { container, image } of imagesOf(renderOverlay('k8s/overlays/prod')))
      expect({ container, digest: parseImage(image).digest }).toEqual({
        container,
        digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      });
  });

  describe.each(OVERLAYS)('%s at two versions', (overlay) => {
    let renders: K8sObject[][];
    beforeAll(() => {
      renders = VERSIONS.map((version) => atVersion(overlay, version));
    });

    test('every image carries the version: its tag, or the digest the release set for it', () => {
      VERSIONS.forEach((version, index) => {
        const objects = renders[index]!;
        expect(releaseOf(objects).version).toBe(version);
        const images = imagesOf(objects);
        expect(images.length).toBeGreaterThan(0);
        for (const { container, image } of images) {
          const { repository, tag, digest } = parseImage(image);
          expect({ version, container, pinned: digest ?? tag }).toEqual({
            version,
            container,
            pinned: digest === undefined ? version : digestOf(repository, version),
          });
        }
        for (const deployment of byKind<Workload>(objects, 'Deployment'))
          expect({ version, name: deployment.metadata.name, label: deployment.spec.template.metadata.labels[VERSION_LABEL] }).toEqual({
            version,
            name: deployment.metadata.name,
            label: version,
          });
      });
    });

    test('each version has a migration Job of its own, a hook for Argo CD: applying the next one creates a Job instead of changing one', () => {
      const jobs = renders.map((objects) => byKind<Workload>(objects, 'Job'));
      expect(jobs.map((list) => list.map((job) => job.metadata.name))).toEqual(VERSIONS.map((version) => [`migrate-${version}`]));
      for (const [job] of jobs)
        expect(job!.metadata.annotations).toMatchObject({
          'argocd.argoproj.io/hook': expect.stringMatching(/^(PreSync|Sync)$/),
          'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation',
        });
    });

    test('changes nothing that kubectl apply cannot change in place: the same objects, selectors and Service addresses', () => {
      const [before, after] = renders.map(
        (objects) =>
          new Map(objects.filter((object) => object.kind !== 'Job').map((object) => [`${object.kind}/${object.metadata.name}`, object])),
      ) as [Map<string, K8sObject>, Map<string, K8sObject>];
      // Every other object is updated in place, none is renamed (a hash-named ConfigMap would be created anew).
      expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
      const immutable: Record<string, (object: K8sObject) => unknown> = {
        Deployment: (object) => (object as Workload).spec.selector,
        Service: (object) => {
          const { selector, clusterIP, type } = object.spec as { selector?: unknown; clusterIP?: string; type?: string };
          return { selector, clusterIP, type };
        },
        PodDisruptionBudget: (object) => (object.spec as { selector: unknown }).selector,
      };
      let compared = 0;
      for (const [id, old] of before) {
        const field = immutable[old.kind];
        if (!field) continue;
        compared += 1;
        expect({ id, field: field(after.get(id)!) }).toEqual({ id, field: field(old) });
      }
      expect(compared).toBeGreaterThan(0);
      // And the upgrade is one: every Deployment's pods change, so each rolls out.
      for (const [id, old] of before)
        if (old.kind === 'Deployment')
          expect({
            id,
            rollsOut: JSON.stringify((after.get(id) as Workload).spec.template) !== JSON.stringify((old as Workload).spec.template),
          }).toEqual({
            id,
            rollsOut: true,
          });
    });
  });

  describe('the optional components: ingress-nginx instead of the Gateway API, and an image pull secret', () => {
    let objects: K8sObject[];
    beforeAll(() => {
      // Enabled as docs/deployment.md says: the commented lines of the prod overlay's `components`, uncommented.
      objects = renderChanged('k8s/overlays/prod', (copy) => {
        const text = copy.read('kustomization.yaml');
        const enabled = text.replace(/^(\s*)# (- \.\.\/\.\.\/components\/(ingress-nginx|image-pull-secret))$/gm, '$1$2');
        expect(enabled.match(/^\s*- \.\.\/\.\.\/components\/(ingress-nginx|image-pull-secret)$/gm)).toHaveLength(2);
        copy.write('kustomization.yaml', enabled);
      });
    });

    test('renders objects valid against the Kubernetes schemas, with no unknown field', () => {
      expect(byKind(objects, 'Ingress')).toHaveLength(1);
      const output = execFileSync(process.execPath, [path.join(__dirname, 'support/validate-k8s.mjs')], {
        input: JSON.stringify(objects),
        encoding: 'utf8',
      });
      expect(JSON.parse(output)).toEqual([]);
    });

    test("routes release.yaml's host to the gateway's Service with an Ingress and its TLS certificate, and no HTTPRoute is left", () => {
      expect(byKind(objects, 'HTTPRoute')).toEqual([]);
      const ingresses = byKind<
        K8sObject & {
          spec: {
            ingressClassName: string;
            rules: { host: string; http: { paths: { backend: { service: { name: string; port: { name: string } } } }[] } }[];
            tls: { hosts: string[]; secretName: string }[];
          };
        }
      >(objects, 'Ingress');
      expect(ingresses).toHaveLength(1);
      const [ingress] = ingresses;
      const { host } = releaseOf(objects);
      expect(ingress!.spec.ingressClassName).toBe('nginx');
      expect(ingress!.spec.rules.map((rule) => rule.host)).toEqual([host]);
      expect(ingress!.spec.tls).toEqual([{ hosts: [host], secretName: 'gateway-tls' }]);
      expect(ingress!.spec.rules.flatMap((rule) => rule.http.paths.map((entry) => entry.backend.service))).toEqual([
        { name: 'gateway', port: { name: 'http' } },
      ]);
      // Server-Sent Events: no buffering, and reads as long as a stream lasts; TLS from cert-manager.
      expect(ingress!.metadata.annotations).toMatchObject({
        'nginx.ingress.kubernetes.io/proxy-buffering': 'off',
        'nginx.ingress.kubernetes.io/proxy-read-timeout': '3600',
        'cert-manager.io/cluster-issuer': 'letsencrypt',
      });
    });

    test("admits the ingress controller to the gateway instead of the Gateway's proxies", () => {
      const policies = byKind(objects, 'NetworkPolicy');
      const gateway = byKind<Workload>(objects, 'Deployment').find((deployment) => deployment.metadata.name === 'gateway')!;
      const app = gateway.spec.template.spec.containers.find((container) => container.name === 'app')!;
      const port = app.ports!.find((entry) => entry.name === 'http')!.containerPort;
      const target = pod('gateway', NAMESPACE, gateway.spec.template.metadata.labels, { http: port });
      const proxy = pod('envoy-public', 'gateway-system', { 'app.kubernetes.io/name': 'envoy' });
      const ingressController = pod('ingress-nginx-controller', 'ingress-nginx', { 'app.kubernetes.io/name': 'ingress-nginx' });
      expect(allowed(policies, ingressController, target, port)).toBe(true);
      expect(allowed(policies, proxy, target, port)).toBe(false);
    });

    test('pulls every image with the Secret fin-registry, which docs/deployment.md tells ops to create', () => {
      const specs = [...byKind<Workload>(objects, 'Deployment'), ...byKind<Workload>(objects, 'Job')];
      expect(specs.length).toBeGreaterThan(0);
      for (const object of specs)
        expect({ name: `${object.kind}/${object.metadata.name}`, secrets: object.spec.template.spec.imagePullSecrets }).toEqual({
          name: `${object.kind}/${object.metadata.name}`,
          secrets: [{ name: 'fin-registry' }],
        });
      expect(DEPLOYMENT_DOC).toContain('`fin-registry`');
    });
  });

  describe('the optional component cloudnative-pg: prod with its own PostgreSQL and scheduled backups', () => {
    let objects: K8sObject[];
    beforeAll(() => {
      objects = renderChanged('k8s/overlays/prod', (copy) => {
        const text = copy.read('kustomization.yaml');
        const enabled = text.replace(/^(\s*)# (- \.\.\/\.\.\/components\/cloudnative-pg)$/m, '$1$2');
        expect(enabled).not.toBe(text);
        copy.write('kustomization.yaml', enabled);
      });
    });

    test('renders objects valid against the Kubernetes, CloudNativePG and Barman Cloud plugin schemas, with no unknown field', () => {
      expect(
        objects
          .filter((object) => /^(postgresql|barmancloud)\.cnpg\.io\//.test(object.apiVersion))
          .map((object) => object.kind)
          .sort(),
      ).toEqual(['Cluster', 'ObjectStore', 'ScheduledBackup']);
      const output = execFileSync(process.execPath, [path.join(__dirname, 'support/validate-k8s.mjs')], {
        input: JSON.stringify(objects),
        encoding: 'utf8',
      });
      expect(JSON.parse(output)).toEqual([]);
    });

    test('the Cluster writes the Secret every pod reads DATABASE_URL from, is backed up daily, and migrates in the Sync phase', () => {
      type Plugin = { name: string; isWALArchiver?: boolean; parameters?: Record<string, string> };
      const [cluster] = byKind<K8sObject & { spec: { instances: number; backup?: unknown; plugins?: Plugin[] } }>(objects, 'Cluster');
      const gateway = byKind<Workload>(objects, 'Deployment').find((deployment) => deployment.metadata.name === 'gateway')!;
      const app = gateway.spec.template.spec.containers.find((container) => container.name === 'app')!;
      // CloudNativePG names the application user's Secret <cluster>-app, with the key uri.
      expect(app.env?.find((variable) => variable.name === 'DATABASE_URL')?.valueFrom).toEqual({
        secretKeyRef: { name: `${cluster!.metadata.name}-app`, key: 'uri' },
      });
      expect(cluster!.spec.instances).toBeGreaterThanOrEqual(3);
      // The WAL and the base backups go through the Barman Cloud plugin into the ObjectStore, which holds the
      // retention; the deprecated in-tree barmanObjectStore is gone.
      expect(cluster!.spec.backup).toBeUndefined();
      const archivers = (cluster!.spec.plugins ?? []).filter((plugin) => plugin.isWALArchiver);
      expect(archivers).toEqual([expect.objectContaining({ name: 'barman-cloud.cloudnative-pg.io' })]);
      const [store] = byKind<K8sObject & { spec: { retentionPolicy?: string; configuration: { destinationPath: string } } }>(
        objects,
        'ObjectStore',
      );
      expect(archivers[0]!.parameters?.barmanObjectName).toBe(store!.metadata.name);
      expect(store!.spec.retentionPolicy).toMatch(/^[1-9]\d*[dwm]$/);
      const [backup] = byKind<
        K8sObject & { spec: { cluster: { name: string }; schedule: string; method?: string; pluginConfiguration?: { name: string } } }
      >(objects, 'ScheduledBackup');
      expect(backup!.spec.cluster.name).toBe(cluster!.metadata.name);
      expect({ method: backup!.spec.method, plugin: backup!.spec.pluginConfiguration?.name }).toEqual({
        method: 'plugin',
        plugin: 'barman-cloud.cloudnative-pg.io',
      });
      // CloudNativePG's schedule has six fields, seconds first.
      expect(backup!.spec.schedule.split(' ')).toHaveLength(6);
      expect(byKind<Workload>(objects, 'Job')[0]!.metadata.annotations?.['argocd.argoproj.io/hook']).toBe('Sync');
    });

    test("the application reaches the database pods, which reach each other, the operator's port and the object store", () => {
      const policies = byKind(objects, 'NetworkPolicy');
      const [cluster] = byKind(objects, 'Cluster');
      const database = pod('fin-database-1', NAMESPACE, { 'cnpg.io/cluster': cluster!.metadata.name }, { postgresql: 5432 });
      const replica = pod('fin-database-2', NAMESPACE, { 'cnpg.io/cluster': cluster!.metadata.name }, { postgresql: 5432 });
      const gateway = byKind<Workload>(objects, 'Deployment').find((deployment) => deployment.metadata.name === 'gateway')!;
      const gatewayPod = pod('gateway', NAMESPACE, gateway.spec.template.metadata.labels);
      const operator = pod('cnpg-controller-manager', 'cnpg-system', { 'app.kubernetes.io/name': 'cloudnative-pg' });
      const store = address('the object store (S3)', '52.216.0.1');
      expect(allowed(policies, gatewayPod, database, 5432)).toBe(true);
      expect(allowed(policies, replica, database, 5432)).toBe(true);
      expect(allowed(policies, operator, database, 8000)).toBe(true);
      expect(allowed(policies, database, store, 443)).toBe(true);
      expect(allowed(policies, pod('elsewhere', 'default', {}), database, 5432)).toBe(false);
    });
  });
});
