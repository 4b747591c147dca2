// The restore of docs/operations.md ("Backups and restore"), rendered: the overlay patch of "A real restore" applied
// to prod with k8s/components/cloudnative-pg recreates fin-database from the path its backups were written to and
// archives elsewhere, and the network policies let it work (the app's pods → the database, the instances → each
// other, the operator → the instances); the drill's own policy lets a standby clone from its primary.
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

interface Cluster extends K8sObject {
  spec: {
    bootstrap: { initdb?: unknown; recovery?: { source: string } };
    externalClusters?: { name: string; barmanObjectStore: { destinationPath: string } }[];
    backup: { barmanObjectStore: { destinationPath: string } };
  };
}

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

test('the patch recreates fin-database from the path its backups went to, and archives into another', () => {
  const before = clusterOf(renderChanged('k8s/overlays/prod', (copy) => enableComponents(copy, ['cloudnative-pg'])));
  const cluster = clusterOf(restored);
  expect(cluster.spec.bootstrap.initdb).toBeUndefined();
  const source = cluster.spec.externalClusters?.find((external) => external.name === cluster.spec.bootstrap.recovery?.source);
  expect(source?.barmanObjectStore.destinationPath).toBe(before.spec.backup.barmanObjectStore.destinationPath);
  expect(cluster.spec.backup.barmanObjectStore.destinationPath).not.toBe(before.spec.backup.barmanObjectStore.destinationPath);
  // Everything else is as it was: same name, so the same Secret fin-database-app and the same policies.
  const others = (objects: K8sObject[]) => objects.filter((object) => object.kind !== 'Cluster');
  expect(others(restored)).toEqual(others(renderChanged('k8s/overlays/prod', (copy) => enableComponents(copy, ['cloudnative-pg']))));
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
