// k8s/components/kafka-auth, Kafka over TLS with a SASL login, rendered into each overlay as docs/deployment.md says
// to enable it, and checked offline: against the schemas, and that the services read the Secret fin-kafka-auth for
// what they need, with a broker list and network policy that match the TLS listener. KEDA has no Kafka login to
// carry: the workers scale on their jobs in PostgreSQL.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parseConfig } from '@fin/config';
import { isSeq, parseDocument } from 'yaml';
import { kafkaConfigShape } from '@fin/events';
import { REPO_ROOT } from './support/deployables';
import { render, renderChanged, type K8sObject } from './support/kubernetes';

const OVERLAYS = readdirSync(path.join(REPO_ROOT, 'k8s/overlays')).map((name) => `k8s/overlays/${name}`);
const SECRET = 'fin-kafka-auth';
const DEPLOYMENT_DOC = readFileSync(path.join(REPO_ROOT, 'docs/deployment.md'), 'utf8');

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { configMapKeyRef?: { name: string; key: string }; secretKeyRef?: { name: string; key: string } };
}
interface Deployment extends K8sObject {
  spec: {
    template: {
      spec: {
        containers: { name: string; env?: EnvVar[]; volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] }[];
        volumes?: { name: string; secret?: { secretName: string; items?: { key: string; path: string }[] } }[];
      };
    };
  };
}
interface ScaledObject extends K8sObject {
  spec: { triggers: { type: string; authenticationRef?: { name: string } }[] };
}

const byKind = <T extends K8sObject>(objects: K8sObject[], kind: string) => objects.filter((object) => object.kind === kind) as T[];

/** The shared settings' ConfigMap (fin-config-<hash>) as a map. */
function sharedConfig(objects: K8sObject[]): Record<string, string> {
  const map = byKind<K8sObject & { data: Record<string, string> }>(objects, 'ConfigMap').find((object) =>
    object.metadata.name.startsWith('fin-config'),
  );
  return map?.data ?? {};
}

/** The app container's environment, values of ConfigMaps resolved, Secret references as `secret:<name>/<key>`. */
function environment(deployment: Deployment, config: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const variable of deployment.spec.template.spec.containers.find((container) => container.name === 'app')?.env ?? []) {
    const { configMapKeyRef: fromMap, secretKeyRef: fromSecret } = variable.valueFrom ?? {};
    if (variable.value !== undefined) env[variable.name] = variable.value;
    else if (fromMap) env[variable.name] = config[fromMap.key] ?? '';
    else if (fromSecret) env[variable.name] = `secret:${fromSecret.name}/${fromSecret.key}`;
  }
  return env;
}

describe.each(OVERLAYS)('%s', (overlay) => {
  it('without the component: no Kafka client has TLS, and no scaler reads Kafka (the workers scale on PostgreSQL)', () => {
    const objects = render(overlay);
    expect(byKind(objects, 'TriggerAuthentication')).toEqual([]);
    const triggers = byKind<ScaledObject>(objects, 'ScaledObject').flatMap((object) => object.spec.triggers);
    expect(triggers.length).toBeGreaterThan(0);
    for (const trigger of triggers) expect(trigger.type).not.toBe('kafka');
    for (const deployment of byKind<Deployment>(objects, 'Deployment'))
      expect(environment(deployment, sharedConfig(objects)).KAFKA_SSL).toBeUndefined();
  });

  describe('with k8s/components/kafka-auth', () => {
    let objects: K8sObject[];
    beforeAll(() => {
      // As an overlay enables it: one more entry in its `components`.
      objects = renderChanged(overlay, (copy) => {
        const kustomization = parseDocument(copy.read('kustomization.yaml'));
        const components = kustomization.get('components');
        if (isSeq(components)) components.add('../../components/kafka-auth');
        else kustomization.set('components', ['../../components/kafka-auth']);
        copy.write('kustomization.yaml', kustomization.toString());
      });
    });

    it('renders objects valid against the Kubernetes and operator schemas, with no unknown field', () => {
      const output = execFileSync(process.execPath, [path.join(__dirname, 'support/validate-k8s.mjs')], {
        input: JSON.stringify(objects),
        encoding: 'utf8',
      });
      expect(JSON.parse(output)).toEqual([]);
    });

    it('gives every Kafka client TLS with the CA from the Secret and the SASL login, which its config parses', () => {
      const config = sharedConfig(objects);
      const clients = byKind<Deployment>(objects, 'Deployment').filter(
        (deployment) => environment(deployment, config).KAFKA_BROKERS !== undefined,
      );
      expect(clients.map((deployment) => deployment.metadata.name).sort()).toEqual(
        expect.arrayContaining(['analysis-worker', 'jobs', 'news-api', 'news-worker', 'stock-report-worker']),
      );
      for (const deployment of clients) {
        const env = environment(deployment, config);
        const { name } = deployment.metadata;
        expect({ name, env }).toMatchObject({
          name,
          env: {
            KAFKA_BROKERS: 'fin-kafka-kafka-bootstrap.kafka.svc:9093',
            KAFKA_SSL: 'true',
            KAFKA_SASL_MECHANISM: `secret:${SECRET}/sasl`,
            KAFKA_SASL_USERNAME: `secret:${SECRET}/username`,
            KAFKA_SASL_PASSWORD: `secret:${SECRET}/password`,
          },
        });
        // The CA file is the Secret's ca.crt, mounted read-only, and nothing else of the Secret is.
        const pod = deployment.spec.template.spec;
        const caFile = env.KAFKA_SSL_CA_FILE ?? '';
        const mount = pod.containers[0]?.volumeMounts?.find((candidate) => caFile.startsWith(`${candidate.mountPath}/`));
        const volume = pod.volumes?.find((candidate) => candidate.name === mount?.name);
        expect({ name, readOnly: mount?.readOnly, secret: volume?.secret }).toEqual({
          name,
          readOnly: true,
          secret: { secretName: SECRET, items: [{ key: 'ca.crt', path: path.relative(mount?.mountPath ?? '', caFile) }] },
        });
        // What the service makes of it, with the Secret's values as ops store them (KEDA's spelling of the mechanism).
        const parsed = parseConfig(kafkaConfigShape('check'), {
          ...Object.fromEntries(
            Object.entries(env).filter(([variable]) => variable.startsWith('KAFKA_') && variable !== 'KAFKA_SSL_CA_FILE'),
          ),
          KAFKA_SASL_MECHANISM: 'scram_sha512',
          KAFKA_SASL_USERNAME: 'fin',
          KAFKA_SASL_PASSWORD: 'password-from-the-secret',
        });
        expect(parsed).toMatchObject({ KAFKA_SSL: true, KAFKA_SASL_MECHANISM: 'scram-sha-512' });
      }
    });

    it('adds no KEDA object: no scaler needs the Kafka login', () => {
      expect(byKind(objects, 'TriggerAuthentication')).toEqual([]);
      for (const object of byKind<ScaledObject>(objects, 'ScaledObject'))
        for (const trigger of object.spec.triggers) expect(trigger.authenticationRef).toBeUndefined();
    });

    it('lets the Kafka clients reach the TLS listener', () => {
      const egress = byKind<K8sObject & { spec: { egress: { ports: { port: number }[] }[] } }>(objects, 'NetworkPolicy').find(
        (policy) => policy.metadata.name === 'kafka-egress',
      );
      expect(egress?.spec.egress.flatMap((rule) => rule.ports.map(({ port }) => port))).toContain(9093);
    });
  });
});

it('docs/deployment.md names every key of the Secret the component reads', () => {
  const section = DEPLOYMENT_DOC.slice(DEPLOYMENT_DOC.indexOf('## Kafka over TLS / SASL'));
  expect(section).toContain(SECRET);
  for (const key of ['sasl', 'username', 'password', 'ca.crt']) expect(section).toContain(`\`${key}\``);
});
