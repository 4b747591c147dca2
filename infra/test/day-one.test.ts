// The day-one runbook of docs/operations.md, checked against the manifests and the images: it has its sections;
// every `kubectl exec` it (or docs/deployment.md) gives names the application's namespace, a Deployment the prod
// overlay renders, its `app` container, and a script the image has at that path from its working directory; the
// restore drill's manifests validate against the CloudNativePG and Kubernetes schemas.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from './support/deployables';
import { parseDockerfile } from './support/dockerfile';
import { render, type K8sObject } from './support/kubernetes';

const NAMESPACE = 'financial-intelligence';
const DOCS = ['docs/operations.md', 'docs/deployment.md'].map((file) => ({
  file,
  text: readFileSync(path.join(REPO_ROOT, file), 'utf8'),
}));
const OPERATIONS = DOCS[0]!.text;

interface Deployment extends K8sObject {
  spec: { template: { spec: { containers: { name: string; image: string }[] } } };
}

/** The runtime stage's working directory, with SERVICE filled in: where `node dist/…` is resolved. */
const workdir = (service: string) => {
  const runtime = parseDockerfile(path.join(REPO_ROOT, 'Dockerfile')).stages.at(-1)!;
  const dirs = runtime.instructions.filter((instruction) => instruction.keyword === 'WORKDIR').map((instruction) => instruction.args);
  return dirs.at(-1)!.replace('${SERVICE}', service);
};

/** The source file a compiled path of an image comes from: /app/services/x/dist/a/b.js → services/x/src/a/b.ts. */
function sourceOf(imagePath: string): string | undefined {
  const match = /^\/app\/(services|packages)\/([\w-]+)\/dist\/(.+)\.js$/.exec(imagePath);
  return match ? path.join(REPO_ROOT, match[1]!, match[2]!, 'src', `${match[3]!}.ts`) : undefined;
}

/** Every `kubectl … exec deploy/<name> … -- node <script> …` command of the docs. */
function execCommands(text: string): string[] {
  return [...text.replace(/\\\n\s*/g, ' ').matchAll(/kubectl\b[^\n`|]*?\bexec [^\n`|]*?-- node \S+/g)].map(([command]) => command);
}

describe('docs/operations.md, day one in Kubernetes', () => {
  test('has the runbook sections: the admin CLI, backups and restore, the customer-tools key, rollback, where the runbooks are', () => {
    const headings = [...OPERATIONS.matchAll(/^### (.+)$/gm)].map(([, heading]) => heading);
    expect(headings).toEqual(
      expect.arrayContaining([
        'The admin CLI in Kubernetes',
        'Backups and restore',
        'The customer-tools key',
        'Rolling back a release',
        'Where the runbooks are',
      ]),
    );
  });

  test('every kubectl exec of the docs works when pasted: namespace, Deployment, container and the script in the image', () => {
    const deployments = render('k8s/overlays/prod').filter((object): object is Deployment => object.kind === 'Deployment');
    const commands = DOCS.flatMap(({ file, text }) => execCommands(text).map((command) => ({ file, command })));
    expect(commands.filter(({ file }) => file === 'docs/operations.md').length).toBeGreaterThanOrEqual(3);
    for (const { file, command } of commands) {
      const words = command.split(/\s+/);
      const at = (flag: string) => (words.includes(flag) ? words[words.indexOf(flag) + 1] : undefined);
      const target = words.find((word) => word.startsWith('deploy/'))?.slice('deploy/'.length);
      const deployment = deployments.find((candidate) => candidate.metadata.name === target);
      const container = deployment?.spec.template.spec.containers.find((candidate) => candidate.name === (at('-c') ?? 'app'));
      const service = container?.image.split('/').at(-1)?.split(/[@:]/)[0];
      const script = words.at(-1)!;
      const imagePath = script.startsWith('/') ? script : path.posix.join(workdir(service ?? '?'), script);
      const source = sourceOf(imagePath);
      expect({
        file,
        command,
        namespace: at('-n'),
        deployment: deployment?.metadata.name,
        container: container?.name,
        source: source !== undefined && existsSync(source),
      }).toEqual({
        file,
        command,
        namespace: NAMESPACE,
        deployment: target,
        container: 'app',
        source: true,
      });
    }
  });

  test('the exec check refuses what would not work: a path from the repository root, no namespace', () => {
    expect(execCommands('kubectl exec deploy/gateway -- node services/gateway/dist/admin/cli.js tenants list')).toHaveLength(1);
    expect(path.posix.join(workdir('gateway'), 'services/gateway/dist/admin/cli.js')).toBe(
      '/app/services/gateway/services/gateway/dist/admin/cli.js',
    );
    expect(existsSync(sourceOf('/app/services/gateway/services/gateway/dist/admin/cli.js') ?? '/nonexistent')).toBe(false);
    expect(existsSync(sourceOf(path.posix.join(workdir('gateway'), 'dist/admin/cli.js'))!)).toBe(true);
  });

  test("the restore drill's manifests validate against the CloudNativePG and Kubernetes schemas, and restore from the Cluster's store", () => {
    const section = OPERATIONS.slice(OPERATIONS.indexOf('### Backups and restore'), OPERATIONS.indexOf('### The customer-tools key'));
    const manifests = [...section.matchAll(/<<'EOF'\n([\s\S]*?)\nEOF/g)].flatMap(([, yaml]) =>
      parseAllDocuments(yaml!).map((document) => document.toJSON() as K8sObject),
    );
    expect(manifests.map((object) => object.kind).sort()).toEqual(['Backup', 'Cluster', 'NetworkPolicy']);
    const output = execFileSync(process.execPath, [path.join(__dirname, 'support/validate-k8s.mjs')], {
      input: JSON.stringify(
        manifests.map((object) => {
          // The Backup has a generateName: the API server names it.
          const metadata = object.metadata as Partial<K8sObject['metadata']>;
          return { ...object, metadata: { ...metadata, name: metadata.name ?? 'fin-database-manual-x', namespace: NAMESPACE } };
        }),
      ),
      encoding: 'utf8',
    });
    expect(JSON.parse(output)).toEqual([]);
    // The drill reads, through the Barman Cloud plugin, the ObjectStore and server the production Cluster archives to.
    type Plugin = { name: string; isWALArchiver?: boolean; parameters?: Record<string, string> };
    const production = parseAllDocuments(readFileSync(path.join(REPO_ROOT, 'k8s/components/cloudnative-pg/postgres.yaml'), 'utf8'))
      .map((document) => document.toJSON() as K8sObject & { spec: { plugins?: Plugin[] } })
      .find((object) => object.kind === 'Cluster')!;
    const archiver = production.spec.plugins!.find((plugin) => plugin.isWALArchiver)!;
    const drill = manifests.find((object) => object.kind === 'Cluster') as K8sObject & {
      spec: { externalClusters: { name: string; plugin: Plugin }[]; bootstrap: { recovery: { source: string } } };
    };
    const source = drill.spec.externalClusters.find((external) => external.name === drill.spec.bootstrap.recovery.source);
    expect(source?.plugin).toEqual({
      name: archiver.name,
      parameters: {
        barmanObjectName: archiver.parameters!.barmanObjectName,
        serverName: archiver.parameters!.serverName ?? production.metadata.name,
      },
    });
  });
});
