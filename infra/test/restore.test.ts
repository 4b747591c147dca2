// The restore of docs/operations.md ("Backups and restore"), rendered: the overlay patch of "A real restore" applied
// to prod with k8s/components/cloudnative-pg recreates fin-database, through the Barman Cloud plugin, from the server
// its backups were written as and archives as another one, and the network policies let it work (the app's pods →
// the database, the instances → each other and the object store, the operator → the instances); the drill's own
// manifests are valid, archive nothing, and its policy lets a standby clone from its primary.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isSeq, parse, parseAllDocuments, parseDocument } from 'yaml';
import { REPO_ROOT } from './support/deployables';
import { allowed, address, enableComponents, pod, render, renderChanged, type K8sObject } from './support/kubernetes';

const OPERATIONS_DOC = readFileSync(path.join(REPO_ROOT, 'docs/operations.md'), 'utf8');
const SECTION = OPERATIONS_DOC.slice(
  OPERATIONS_DOC.indexOf('### Backups and restore'),
  OPERATIONS_DOC.indexOf('### The customer-tools key'),
);
const NAMESPACE = 'financial-intelligence';
const APP = { 'app.kubernetes.io/part-of': 'financial-intelligence-api' };

const PLUGIN = 'barman-cloud.cloudnative-pg.io';
interface Plugin {
  name: string;
  isWALArchiver?: boolean;
  parameters?: { barmanObjectName?: string; serverName?: string };
}
interface Cluster extends K8sObject {
  spec: {
    bootstrap: { initdb?: unknown; recovery?: { source: string } };
    externalClusters?: { name: string; plugin?: Plugin; barmanObjectStore?: unknown }[];
    backup?: unknown;
    plugins?: Plugin[];
  };
}
interface ObjectStore extends K8sObject {
  spec: { configuration: { destinationPath: string } };
}

/** Where a Cluster's WAL archiver writes: its ObjectStore's bucket and the server name (the Cluster's by default). */
function archive(objects: K8sObject[], cluster: Cluster): { destinationPath: string; serverName: string } | undefined {
  const archiver = cluster.spec.plugins?.find((plugin) => plugin.name === PLUGIN && plugin.isWALArchiver);
  if (!archiver) return undefined;
  const store = objects.find(
    (object) => object.kind === 'ObjectStore' && object.metadata.name === archiver.parameters?.barmanObjectName,
  ) as ObjectStore | undefined;
  if (!store) throw new Error(`no ObjectStore ${archiver.parameters?.barmanObjectName}`);
  return {
    destinationPath: store.spec.configuration.destinationPath,
    serverName: archiver.parameters?.serverName ?? cluster.metadata.name,
  };
}

/** Where a recovery reads from: the bootstrap source's ObjectStore bucket and server name. */
function recoverySource(objects: K8sObject[], cluster: Cluster): { destinationPath: string; serverName: string } | undefined {
  const source = cluster.spec.externalClusters?.find((external) => external.name === cluster.spec.bootstrap.recovery?.source);
  if (source?.plugin?.name !== PLUGIN) return undefined;
  const store = objects.find(
    (object) => object.kind === 'ObjectStore' && object.metadata.name === source.plugin?.parameters?.barmanObjectName,
  ) as ObjectStore | undefined;
  if (!store) throw new Error(`no ObjectStore ${source.plugin.parameters?.barmanObjectName}`);
  return { destinationPath: store.spec.configuration.destinationPath, serverName: source.plugin.parameters?.serverName ?? source.name };
}

const invalid = (objects: K8sObject[]) =>
  JSON.parse(
    execFileSync(process.execPath, [path.join(__dirname, 'support/validate-k8s.mjs')], {
      input: JSON.stringify(objects),
      encoding: 'utf8',
    }),
  ) as unknown[];

/** The yaml blocks of the section, in order: the restore patch is the one that targets the Cluster. */
const yamlBlocks = [...SECTION.matchAll(/```yaml\n([\s\S]*?)```/g)].map(([, block]) => block!);
const restorePatch = (() => {
  const block = yamlBlocks.find((text) => text.includes('kind: Cluster, name: fin-database'));
  if (!block) throw new Error('docs/operations.md shows no restore patch of the Cluster fin-database');
  return parse(block) as unknown[];
})();
/** The drill's manifests: the `kubectl apply -f - <<'EOF'` of the section that names fin-database-drill. */
const drill = (() => {
  const heredoc = /kubectl -n financial-intelligence apply -f - <<'EOF'\n([\s\S]*?)\nEOF/.exec(SECTION)?.[1];
  if (!heredoc?.includes('fin-database-drill')) throw new Error('docs/operations.md shows no drill manifest');
  return parseAllDocuments(heredoc).map((document) => ({
    ...(document.toJSON() as K8sObject),
    metadata: { ...(document.toJSON() as K8sObject).metadata, namespace: NAMESPACE },
  }));
})();

const restored = renderChanged('k8s/overlays/prod', (copy) => {
  enableComponents(copy, ['cloudnative-pg']);
  const kustomization = parseDocument(copy.read('kustomization.yaml'));
  const list = kustomization.get('patches');
  if (!isSeq(list)) throw new Error('prod has no patches');
  for (const patch of restorePatch) list.add(kustomization.createNode(patch));
  copy.write('kustomization.yaml', kustomization.toString());
});
const clusterOf = (objects: K8sObject[]) =>
  objects.find((object) => object.kind === 'Cluster' && object.metadata.name === 'fin-database') as Cluster;

const original = renderChanged('k8s/overlays/prod', (copy) => enableComponents(copy, ['cloudnative-pg']));

test('the patch recreates fin-database from the server its backups went to, and archives as another server', () => {
  const before = clusterOf(original);
  const cluster = clusterOf(restored);
  expect(cluster.spec.bootstrap.initdb).toBeUndefined();
  // Through the plugin, not the deprecated in-tree barmanObjectStore.
  expect(cluster.spec.backup).toBeUndefined();
  expect(cluster.spec.externalClusters?.some((external) => external.barmanObjectStore !== undefined)).toBe(false);
  const written = archive(original, before);
  expect(written).toEqual({ destinationPath: expect.stringMatching(/^s3:\/\//), serverName: 'fin-database' });
  expect(recoverySource(restored, cluster)).toEqual(written);
  const next = archive(restored, cluster);
  expect(next).toBeDefined();
  expect(next).not.toEqual(written);
  // Everything else is as it was: same name, so the same Secret fin-database-app and the same policies.
  const others = (objects: K8sObject[]) => objects.filter((object) => object.kind !== 'Cluster');
  expect(others(restored)).toEqual(others(original));
});

test('the recovering Cluster is valid against the CloudNativePG schema, with no unknown field', () => {
  expect(invalid([clusterOf(restored)])).toEqual([]);
});

test("a second restore reads from the first restore's server and archives as a third", () => {
  // The documented patch with the names moved one step on, as the doc says the next restore does.
  const text = JSON.stringify(restorePatch).replace('value: fin-database-2 }', 'value: fin-database-3 }');
  const second = JSON.parse(text.replace('serverName: fin-database\\n', 'serverName: fin-database-2\\n')) as unknown[];
  expect(JSON.stringify(second)).not.toBe(JSON.stringify(restorePatch));
  const objects = renderChanged('k8s/overlays/prod', (copy) => {
    enableComponents(copy, ['cloudnative-pg']);
    const kustomization = parseDocument(copy.read('kustomization.yaml'));
    const list = kustomization.get('patches') as { add: (node: unknown) => void };
    for (const patch of second) list.add(kustomization.createNode(patch));
    copy.write('kustomization.yaml', kustomization.toString());
  });
  const cluster = clusterOf(objects);
  expect(recoverySource(objects, cluster)?.serverName).toBe('fin-database-2');
  expect(archive(objects, cluster)?.serverName).toBe('fin-database-3');
});

test("the restored Cluster's pods are reached by the app's pods, by each other and by the operator", () => {
  const policies = restored.filter((object) => object.kind === 'NetworkPolicy');
  const instance = (name: string) => pod(name, NAMESPACE, { 'cnpg.io/cluster': 'fin-database' });
  const worker = pod('news-worker', NAMESPACE, { ...APP, 'app.kubernetes.io/name': 'news' });
  expect({
    app: allowed(policies, worker, instance('fin-database-1'), 5432),
    replication: allowed(policies, instance('fin-database-2'), instance('fin-database-1'), 5432),
    status: allowed(policies, instance('fin-database-2'), instance('fin-database-1'), 8000),
    operator: allowed(policies, pod('cnpg-controller-manager', 'cnpg-system'), instance('fin-database-1'), 8000),
    store: allowed(policies, instance('fin-database-1'), address('s3', '52.216.8.1'), 443),
  }).toEqual({ app: true, replication: true, status: true, operator: true, store: true });
});

test("the drill's Cluster is valid, reads the live cluster's backups through the plugin and archives nothing", () => {
  const [cluster] = drill.filter((object) => object.kind === 'Cluster') as Cluster[];
  expect(invalid(drill)).toEqual([]);
  expect(recoverySource(original, cluster!)).toEqual(archive(original, clusterOf(original)));
  expect(cluster!.spec.plugins).toBeUndefined();
  expect(cluster!.spec.backup).toBeUndefined();
});

test("the drill's policy lets a standby clone from its primary, the operator in, and the store and API out", () => {
  const policies = [
    ...render('k8s/overlays/prod').filter((object) => object.kind === 'NetworkPolicy'),
    ...drill.filter((object) => object.kind === 'NetworkPolicy'),
  ];
  expect(policies.some((policy) => policy.metadata.name === 'fin-database-drill')).toBe(true);
  const instance = (name: string) => pod(name, NAMESPACE, { 'cnpg.io/cluster': 'fin-database-drill' });
  expect({
    clone: allowed(policies, instance('fin-database-drill-2'), instance('fin-database-drill-1'), 5432),
    status: allowed(policies, instance('fin-database-drill-2'), instance('fin-database-drill-1'), 8000),
    operator: allowed(policies, pod('cnpg-controller-manager', 'cnpg-system'), instance('fin-database-drill-1'), 8000),
    store: allowed(policies, instance('fin-database-drill-1'), address('s3', '52.216.8.1'), 443),
    // The drill is beside the application, not part of it: the app's pods do not reach it.
    app: allowed(policies, pod('news-worker', NAMESPACE, APP), instance('fin-database-drill-1'), 5432),
  }).toEqual({ clone: true, status: true, operator: true, store: true, app: false });
});
