// Topics on a managed Kafka (docs/deployment.md, "Topics on a managed Kafka"): the services never create topics in
// prod, whatever optional component is added (with KAFKA_ENSURE_TOPICS=true they would create them with replication
// factor 1), and infra/src/kafka/topic-commands.mjs turns the overlay's KafkaTopics into kafka-topics.sh commands
// with the KafkaTopics' partitions, replicas and config, refusing single-copy topics unless told it is a
// one-broker development cluster. The generated script is run with a stand-in kafka-topics.sh that records its
// arguments, since no managed cluster is reachable here.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './support/deployables';
import { enableComponents, optionalComponents, render, renderChanged, type K8sObject } from './support/kubernetes';

const SCRIPT = path.join(REPO_ROOT, 'infra/src/kafka/topic-commands.mjs');
const DEPLOYMENT_DOC = readFileSync(path.join(REPO_ROOT, 'docs/deployment.md'), 'utf8');

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { configMapKeyRef?: { name: string; key: string } };
}
interface Deployment extends K8sObject {
  spec: { template: { spec: { containers: { name: string; env?: EnvVar[] }[] } } };
}
interface KafkaTopic extends K8sObject {
  spec: { topicName?: string; partitions: number; replicas: number; config?: Record<string, string | number> };
}

/** Each Kafka client's KAFKA_ENSURE_TOPICS as its container would read it (a literal, or from its ConfigMap). */
function ensureTopicsOf(objects: K8sObject[]): Record<string, string | undefined> {
  const configMaps = new Map(
    objects
      .filter((object) => object.kind === 'ConfigMap')
      .map((object) => [object.metadata.name, (object as K8sObject & { data?: Record<string, string> }).data ?? {}]),
  );
  const result: Record<string, string | undefined> = {};
  for (const deployment of objects.filter((object): object is Deployment => object.kind === 'Deployment')) {
    for (const container of deployment.spec.template.spec.containers) {
      const env = container.env ?? [];
      if (!env.some((variable) => variable.name === 'KAFKA_BROKERS')) continue;
      const variable = env.filter((entry) => entry.name === 'KAFKA_ENSURE_TOPICS').at(-1);
      const ref = variable?.valueFrom?.configMapKeyRef;
      result[`${deployment.metadata.name}/${container.name}`] = ref ? configMaps.get(ref.name)?.[ref.key] : variable?.value;
    }
  }
  return result;
}

const topicCommands = (objects: K8sObject[], args: string[] = []) =>
  spawnSync(process.execPath, [SCRIPT, ...args], { input: JSON.stringify(objects), encoding: 'utf8' });

describe('prod: the services create no topic', () => {
  test.each([
    ['alone', [] as string[]],
    ['with every optional component', optionalComponents('k8s/overlays/prod')],
  ])('%s, every Kafka client reads KAFKA_ENSURE_TOPICS=false', (_name, components) => {
    const objects =
      components.length === 0
        ? render('k8s/overlays/prod')
        : renderChanged('k8s/overlays/prod', (copy) => enableComponents(copy, components));
    const clients = ensureTopicsOf(objects);
    expect(Object.keys(clients).length).toBeGreaterThanOrEqual(7);
    for (const [client, value] of Object.entries(clients)) expect({ client, value }).toEqual({ client, value: 'false' });
  });
});

describe('infra/src/kafka/topic-commands.mjs', () => {
  const prod = render('k8s/overlays/prod');
  const topics = prod.filter((object): object is KafkaTopic => object.kind === 'KafkaTopic');

  test('prints one kafka-topics.sh --create per KafkaTopic of prod, with its partitions, replicas and config, which runs as a POSIX script', () => {
    const result = topicCommands(prod);
    expect(result.status).toBe(0);
    const commands = result.stdout.split('\n').filter((line) => line.startsWith('kafka-topics.sh '));
    expect(commands).toHaveLength(topics.length);
    expect(topics.length).toBeGreaterThanOrEqual(8);
    // Run it with a stand-in kafka-topics.sh that records its arguments, one line per call.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'topics-'));
    try {
      writeFileSync(path.join(dir, 'script.sh'), result.stdout);
      writeFileSync(path.join(dir, 'kafka-topics.sh'), `#!/bin/sh\nprintf '%s\\n' "$*" >> "${dir}/calls"\n`);
      chmodSync(path.join(dir, 'kafka-topics.sh'), 0o755);
      const run = spawnSync('sh', [path.join(dir, 'script.sh')], {
        encoding: 'utf8',
        env: {
          PATH: `${dir}:${process.env.PATH ?? ''}`,
          KAFKA_BOOTSTRAP: 'b-1.example:9096',
          KAFKA_CLIENT_PROPERTIES: '/tmp/client.properties',
        },
      });
      expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
      const calls = readFileSync(path.join(dir, 'calls'), 'utf8').trim().split('\n');
      expect(calls).toHaveLength(topics.length);
      for (const topic of topics) {
        const name = topic.spec.topicName ?? topic.metadata.name;
        const call = calls.find((line) => line.includes(` --topic ${name} `));
        const config = Object.entries(topic.spec.config ?? {}).map(([key, value]) => `--config ${key}=${value}`);
        expect(call).toBe(
          [
            '--bootstrap-server b-1.example:9096 --command-config /tmp/client.properties --create --if-not-exists',
            `--topic ${name} --partitions ${topic.spec.partitions} --replication-factor ${topic.spec.replicas}`,
            ...config,
          ].join(' '),
        );
        expect(topic.spec.replicas).toBeGreaterThanOrEqual(3);
        expect(Number(topic.spec.config?.['min.insync.replicas'])).toBeGreaterThanOrEqual(2);
      }
      // Without the cluster's address the script stops before creating anything.
      const bare = spawnSync('sh', [path.join(dir, 'script.sh')], { encoding: 'utf8', env: { PATH: `${dir}:${process.env.PATH ?? ''}` } });
      expect(bare.status).not.toBe(0);
      expect(bare.stderr).toContain('KAFKA_BOOTSTRAP');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("names the topics with the services' KAFKA_TOPIC_PREFIX", () => {
    const result = topicCommands(prod, ['--prefix', 'fin.']);
    expect(result.stdout).toContain("--topic 'fin.jobs.events' ");
  });

  test("refuses dev's single-copy topics unless told the cluster has one broker", () => {
    const dev = render('k8s/overlays/dev');
    const refused = topicCommands(dev);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('fewer than 2 replicas');
    expect(refused.stdout).toBe('');
    expect(topicCommands(dev, ['--allow-single-replica']).status).toBe(0);
  });

  test('docs/deployment.md shows the command', () => {
    expect(DEPLOYMENT_DOC).toContain('kubectl kustomize k8s/overlays/prod | node infra/src/kafka/topic-commands.mjs');
  });
});
