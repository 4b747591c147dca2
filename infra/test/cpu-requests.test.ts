// The APIs' CPU requests are sized for their autoscalers (docs/deployment.md, "CPU requests"): an HPA on CPU
// utilisation scales out at request × target, which must be the documented scale-out point (350m, about a third of
// the one core a Node process can use), within the container's CPU limit, in both overlays' prod shape.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './support/deployables';
import { render, type K8sObject } from './support/kubernetes';

const DEPLOYMENT_DOC = readFileSync(path.join(REPO_ROOT, 'docs/deployment.md'), 'utf8');
const SCALE_OUT_MILLICORES = 350;

interface Hpa extends K8sObject {
  spec: {
    scaleTargetRef: { kind: string; name: string };
    metrics: { type: string; resource?: { name: string; target: { type: string; averageUtilization?: number } } }[];
  };
}
interface Deployment extends K8sObject {
  spec: { template: { spec: { containers: { name: string; resources: { requests: { cpu: string }; limits: { cpu: string } } }[] } } };
}

/** A CPU quantity in millicores ("500m", "1", "1.5"). */
const millicores = (quantity: string) => (quantity.endsWith('m') ? Number(quantity.slice(0, -1)) : Number(quantity) * 1000);

const objects = render('k8s/overlays/prod');
const hpas = objects.filter((object): object is Hpa => object.kind === 'HorizontalPodAutoscaler');

test('prod autoscales every API on CPU utilisation', () => {
  expect(hpas.map((hpa) => hpa.spec.scaleTargetRef.name).sort()).toEqual(
    ['analysis-api', 'chat', 'gateway', 'jobs', 'mcp', 'news-api', 'portal', 'stock-report-api'].sort(),
  );
});

test.each(hpas.map((hpa) => [hpa.spec.scaleTargetRef.name, hpa] as const))(
  "%s scales out at the documented point: its pods' CPU request × the HPA's target, within the CPU limit",
  (name, hpa) => {
    const deployment = objects.find((object): object is Deployment => object.kind === 'Deployment' && object.metadata.name === name)!;
    const cpu = hpa.spec.metrics.find((metric) => metric.type === 'Resource' && metric.resource?.name === 'cpu')!.resource!.target;
    expect(cpu.type).toBe('Utilization');
    // The HPA averages over the pod's containers' requests: the app container is the pod's only one.
    const [app, ...others] = deployment.spec.template.spec.containers;
    expect(others).toEqual([]);
    const request = millicores(app!.resources.requests.cpu);
    expect({ name, scaleOut: (request * cpu.averageUtilization!) / 100 }).toEqual({ name, scaleOut: SCALE_OUT_MILLICORES });
    expect(millicores(app!.resources.limits.cpu)).toBeGreaterThanOrEqual(request);
    expect(millicores(app!.resources.limits.cpu)).toBeGreaterThan(SCALE_OUT_MILLICORES);
  },
);

test('docs/deployment.md gives the arithmetic for these figures', () => {
  const section = DEPLOYMENT_DOC.slice(DEPLOYMENT_DOC.indexOf('#### CPU requests'), DEPLOYMENT_DOC.indexOf('### Capacity planning'));
  expect(section).toContain(`**${SCALE_OUT_MILLICORES}m**`);
  expect(section).toContain('350m ÷ 0.70');
  expect(section).toContain('**500m**');
});
