// The platform's peers in the default-deny network policies are settings (docs/deployment.md, "Namespaces of the
// platform"): every namespace a rendered policy names comes from the overlay's platform.yaml, changing a setting
// moves its flow (and only its flow) to the new namespace, and the documented ipBlock patches admit a cloud load
// balancer and a node-local DNS cache, which come from no namespace. Flows are evaluated with the same NetworkPolicy
// evaluator as the other infra tests.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { isSeq, parse, parseAllDocuments, parseDocument } from 'yaml';
import { REPO_ROOT } from './support/deployables';
import {
  KUBECTL,
  KUSTOMIZE_4,
  address,
  allowed,
  enableComponents,
  kubectlRenderer,
  optionalComponents,
  pod,
  renderChanged,
  type Endpoint,
  type K8sObject,
  type OverlayCopy,
} from './support/kubernetes';

const OVERLAYS = readdirSync(path.join(REPO_ROOT, 'k8s/overlays')).map((name) => `k8s/overlays/${name}`);
const DEPLOYMENT_DOC = readFileSync(path.join(REPO_ROOT, 'docs/deployment.md'), 'utf8');
const NAMESPACE = 'financial-intelligence';
const PART_OF = { 'app.kubernetes.io/part-of': 'financial-intelligence-api' };

type Settings = Record<string, string>;
const settingsOf = (overlay: string): Settings =>
  (parse(readFileSync(path.join(REPO_ROOT, overlay, 'platform.yaml'), 'utf8')) as { data: Settings }).data;

/** The "Namespaces of the platform" section of docs/deployment.md, up to the next heading. */
const SECTION = (() => {
  const start = DEPLOYMENT_DOC.indexOf('#### Namespaces of the platform');
  const end = DEPLOYMENT_DOC.indexOf('\n### ', start);
  return DEPLOYMENT_DOC.slice(start, end);
})();
const yamlBlocks = [...SECTION.matchAll(/```yaml\n([\s\S]*?)```/g)].map(([, block]) => block!);

/** The namespaces the policies name in a namespaceSelector (by kubernetes.io/metadata.name). */
function namedNamespaces(objects: K8sObject[]): string[] {
  const names = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node !== null && typeof node === 'object') {
      const record = node as Record<string, unknown>;
      const name = (record.namespaceSelector as { matchLabels?: Record<string, string> } | undefined)?.matchLabels?.[
        'kubernetes.io/metadata.name'
      ];
      if (name !== undefined) names.add(name);
      Object.values(record).forEach(visit);
    }
  };
  for (const object of objects) if (object.kind === 'NetworkPolicy') visit(object.spec);
  return [...names].sort();
}

/** A copy of the overlay with its optional components (ingress-nginx only when asked) and these settings. */
function withSettings(copy: OverlayCopy, overlay: string, settings: Settings, ingressNginx: boolean): void {
  enableComponents(
    copy,
    optionalComponents(overlay).filter((name) => ingressNginx || name !== 'ingress-nginx'),
  );
  const platform = parseDocument(copy.read('platform.yaml'));
  for (const [key, value] of Object.entries(settings)) platform.setIn(['data', key], value);
  copy.write('platform.yaml', platform.toString());
}

/** The flows each setting governs, from a pod of the namespace it names. */
function flows(objects: K8sObject[], settings: Settings, ingressNginx: boolean): Record<string, boolean> {
  const policies = objects.filter((object) => object.kind === 'NetworkPolicy');
  const gateway = pod('gateway', NAMESPACE, { 'app.kubernetes.io/name': 'gateway', ...PART_OF }, { http: 8080, metrics: 9080 });
  const worker = pod('news-worker', NAMESPACE, { 'app.kubernetes.io/name': 'news', 'fin/egress-kafka': 'true', ...PART_OF });
  const database = pod('fin-database-1', NAMESPACE, { 'cnpg.io/cluster': 'fin-database' });
  const entry = ingressNginx ? settings['ingress-nginx-namespace']! : settings['gateway-proxies-namespace']!;
  const result: Record<string, boolean> = {
    entry: allowed(policies, pod('proxy', entry), gateway, 8080),
    prometheus: allowed(policies, pod('prometheus-0', settings['prometheus-namespace']!), gateway, 9080),
    kafka: allowed(policies, worker, pod('fin-kafka-broker-0', settings['kafka-namespace']!), 9092),
    dns: allowed(policies, worker, pod('coredns', settings['dns-namespace']!, { 'k8s-app': 'kube-dns' }), 53, 'UDP'),
  };
  if (objects.some((object) => object.kind === 'Cluster')) {
    result.cnpg = allowed(policies, pod('cnpg-controller-manager', settings['cnpg-operator-namespace']!), database, 8000);
    // Prometheus scrapes the database's exporter too (the PodMonitor fin-database of k8s/components/monitoring).
    result.databaseMetrics = allowed(policies, pod('prometheus-0', settings['prometheus-namespace']!), database, 9187);
    // KEDA's PostgreSQL scaler counts the workers' jobs (the ScaledObjects' query).
    result.keda = allowed(policies, pod('keda-operator', settings['keda-namespace']!), database, 5432);
  }
  return result;
}

/** kubectl's kustomize where there is one (faster here); the last test compares it with 4.5.4 on these settings. */
const RENDERER = KUBECTL === undefined ? KUSTOMIZE_4 : kubectlRenderer(KUBECTL);

const moved = (settings: Settings): Settings =>
  Object.fromEntries(Object.keys(settings).map((key) => [key, `elsewhere-${key.split('-')[0]}`]));

describe.each(OVERLAYS)('%s', (overlay) => {
  const defaults = settingsOf(overlay);

  test('platform.yaml sets each peer, and the rendered policies name no namespace that is not one of its settings', () => {
    expect(Object.keys(defaults).sort()).toEqual([
      'cnpg-operator-namespace',
      'dns-namespace',
      'gateway-proxies-namespace',
      'ingress-nginx-namespace',
      'kafka-namespace',
      'keda-namespace',
      'prometheus-namespace',
    ]);
    for (const ingressNginx of [false, true]) {
      const objects = renderChanged(overlay, (copy) => withSettings(copy, overlay, {}, ingressNginx), RENDERER);
      for (const name of namedNamespaces(objects))
        expect({ name, setting: Object.values(defaults).includes(name) }).toEqual({ name, setting: true });
      // The ConfigMap is applied too: in the cluster it tells what the policies admit.
      expect(objects.filter((object) => object.metadata.name === 'fin-platform')).toHaveLength(1);
    }
  });

  test.each([false, true])('with ingress-nginx: %s, changing every setting moves each flow to the new namespace', (ingressNginx) => {
    const settings = moved(defaults);
    const objects = renderChanged(overlay, (copy) => withSettings(copy, overlay, settings, ingressNginx), RENDERER);
    const now = flows(objects, settings, ingressNginx);
    expect(now).toEqual(Object.fromEntries(Object.keys(now).map((flow) => [flow, true])));
    expect(Object.keys(now).length).toBeGreaterThanOrEqual(4);
    // And away from the defaults.
    expect(Object.values(flows(objects, defaults, ingressNginx)).some(Boolean)).toBe(false);
    // The defaults, unchanged, admit the default namespaces.
    const unchanged = renderChanged(overlay, (copy) => withSettings(copy, overlay, {}, ingressNginx), RENDERER);
    expect(Object.values(flows(unchanged, defaults, ingressNginx)).every(Boolean)).toBe(true);
  });
});

test('the settings render alike on both kustomize versions', () => {
  if (KUBECTL === undefined) return;
  const kubectl = kubectlRenderer(KUBECTL);
  const overlay = 'k8s/overlays/dev';
  const change = (copy: OverlayCopy) => withSettings(copy, overlay, moved(settingsOf(overlay)), true);
  const policies = (objects: K8sObject[]) => objects.filter((object) => object.kind === 'NetworkPolicy');
  expect(policies(renderChanged(overlay, change, kubectl))).toEqual(policies(renderChanged(overlay, change, KUSTOMIZE_4)));
});

describe('docs/deployment.md, "Namespaces of the platform"', () => {
  test("its platform.yaml example sets every setting, and its settings table names each one with the overlays' defaults", () => {
    const [example] = parseAllDocuments(yamlBlocks[0] ?? '').map((document) => document.toJSON() as { data: Settings });
    const defaults = settingsOf('k8s/overlays/prod');
    expect(Object.keys(example!.data).sort()).toEqual(Object.keys(defaults).sort());
    for (const [key, value] of Object.entries(defaults)) expect(SECTION).toContain(`| \`${key}\` | \`${value}\` |`);
    for (const overlay of OVERLAYS) expect(settingsOf(overlay)).toEqual(defaults);
  });

  test('its ipBlock patches admit a cloud load balancer to the gateway and the pods to a node-local DNS cache', () => {
    const patches = parse(yamlBlocks[1] ?? '') as unknown[];
    expect(patches.length).toBe(2);
    const overlay = 'k8s/overlays/prod';
    const withPatches = (copy: OverlayCopy) => {
      const kustomization = parseDocument(copy.read('kustomization.yaml'));
      const list = kustomization.get('patches');
      if (!isSeq(list)) throw new Error(`${overlay} has no patches`);
      for (const patch of patches) list.add(kustomization.createNode(patch));
      copy.write('kustomization.yaml', kustomization.toString());
    };
    const check = (objects: K8sObject[]) => {
      const policies = objects.filter((object) => object.kind === 'NetworkPolicy');
      const gateway = pod('gateway', NAMESPACE, { 'app.kubernetes.io/name': 'gateway', ...PART_OF }, { http: 8080 });
      const worker: Endpoint = pod('news-worker', NAMESPACE, { 'app.kubernetes.io/name': 'news', ...PART_OF });
      return {
        loadBalancer: allowed(policies, address('gke-proxy', '35.191.12.4'), gateway, 8080),
        nodeLocalDns: allowed(policies, worker, address('node-local-dns', '169.254.20.10'), 53, 'UDP'),
        // The namespace peers stay.
        proxies: allowed(policies, pod('proxy', 'gateway-system'), gateway, 8080),
        // Nothing else of the ranges: not the metadata service, not another port.
        metadata: allowed(policies, worker, address('metadata', '169.254.169.254'), 53, 'UDP'),
        loadBalancerElsewhere: allowed(policies, address('gke-proxy', '35.191.12.4'), gateway, 9080),
      };
    };
    expect(check(renderChanged(overlay, () => undefined, RENDERER))).toEqual({
      loadBalancer: false,
      nodeLocalDns: false,
      proxies: true,
      metadata: false,
      loadBalancerElsewhere: false,
    });
    expect(check(renderChanged(overlay, withPatches, RENDERER))).toEqual({
      loadBalancer: true,
      nodeLocalDns: true,
      proxies: true,
      metadata: false,
      loadBalancerElsewhere: false,
    });
  });
});
