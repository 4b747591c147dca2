// What a cluster needs before the first apply (docs/deployment.md, "What the cluster needs"): the check command
// there names every CRD an overlay renders, alone and with every optional component, so `kubectl get crd …`
// fails before an apply would fail half-way. (The platform's namespaces in the network policies, "Namespaces of the
// platform": network-policies.test.ts.)
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './support/deployables';
import { enableComponents, optionalComponents, render, renderChanged, type K8sObject } from './support/kubernetes';

const OVERLAYS = readdirSync(path.join(REPO_ROOT, 'k8s/overlays')).map((name) => `k8s/overlays/${name}`);
const DEPLOYMENT_DOC = readFileSync(path.join(REPO_ROOT, 'docs/deployment.md'), 'utf8');
/** API groups every cluster serves: anything else is a CRD. */
const BUILT_IN = new Set(['', 'apps', 'batch', 'policy', 'autoscaling', 'networking.k8s.io', 'rbac.authorization.k8s.io']);

/** A section of the document: from its heading to the next heading of the same or a higher level (not in code). */
function section(markdown: string, heading: string): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => /^#+ /.test(line) && line.replace(/^#+ /, '') === heading);
  if (start < 0) throw new Error(`docs/deployment.md has no section "${heading}"`);
  const level = lines[start]!.indexOf(' ');
  let fenced = false;
  let end = lines.length;
  for (let index = start + 1; index < lines.length; index += 1) {
    const line = lines[index]!;
    if (line.startsWith('```')) fenced = !fenced;
    else if (!fenced && /^#+ /.test(line) && line.indexOf(' ') <= level) {
      end = index;
      break;
    }
  }
  return lines.slice(start + 1, end).join('\n');
}

/** The CRD names (`<plural>.<group>`) the check command asks for: the arguments of `kubectl get crd`. */
function checkedCrds(markdown: string): Set<string> {
  const block = /```sh\n([\s\S]*?)```/.exec(section(markdown, 'What the cluster needs'))?.[1] ?? '';
  const names = new Set<string>();
  for (const command of block.replace(/\\\n/g, ' ').split('\n'))
    if (command.trim().startsWith('kubectl get crd ')) for (const word of command.trim().split(/\s+/).slice(3)) names.add(word);
  return names;
}

/** The CRDs a rendering needs: one per kind of a group the cluster does not serve itself. */
function crdsOf(objects: K8sObject[]): string[] {
  const crds = new Set<string>();
  for (const { apiVersion, kind } of objects) {
    const group = apiVersion.includes('/') ? apiVersion.split('/')[0]! : '';
    if (!BUILT_IN.has(group)) crds.add(`${kind.toLowerCase()}s.${group}`);
  }
  return [...crds].sort();
}

describe.each(OVERLAYS)('%s', (overlay) => {
  test('the check command of docs/deployment.md names every CRD the overlay renders, with every optional component too', () => {
    const checked = checkedCrds(DEPLOYMENT_DOC);
    const needed = new Set([
      ...crdsOf(render(overlay)),
      ...crdsOf(renderChanged(overlay, (copy) => enableComponents(copy, optionalComponents(overlay)))),
    ]);
    expect(needed.size).toBeGreaterThan(3);
    for (const crd of needed) expect({ crd, checked: checked.has(crd) }).toEqual({ crd, checked: true });
  });
});

test('the CRD check sees what the command leaves out', () => {
  const without = DEPLOYMENT_DOC.replace(' scaledobjects.keda.sh', '');
  expect(checkedCrds(DEPLOYMENT_DOC).has('scaledobjects.keda.sh')).toBe(true);
  expect(checkedCrds(without).has('scaledobjects.keda.sh')).toBe(false);
});
