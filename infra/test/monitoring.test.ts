// k8s/components/monitoring, opt-in: neither overlay renders it until an operator adds it to the overlay's
// `components` (a cluster without the Prometheus Operator's CRDs applies cleanly). Added, as both overlays then
// render it: the PodMonitor scrapes what the pods serve, every alert is
// complete (the fields promtool and Alertmanager need, a runbook that exists), every rule and dashboard query
// parses with Prometheus's PromQL parser and reads only metrics the services export (or kube-state-metrics' and
// Prometheus' own), and the dashboards match Grafana's dashboard schema. The checkers are tested on broken input
// too, so a check that stopped checking would fail here.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './support/deployables';
import { dashboardTypeErrors } from './support/grafana';
import { parseDocument, stringify } from 'yaml';
import {
  address,
  allowed,
  enableComponents,
  render,
  renderChanged,
  selects,
  type K8sObject,
  type LabelSelector,
  type OverlayCopy,
  pod,
} from './support/kubernetes';
import { checkPromql, exportedMetricNames, grafanaToPromql, loadPromqlParser, promqlProblems } from './support/promql';

const OVERLAYS = ['k8s/overlays/dev', 'k8s/overlays/prod'];

/** An overlay as an operator enables monitoring in it (docs/deployment.md, "Alerts and dashboards"), with `change`. */
const rendered = new Map<string, K8sObject[]>();
function withMonitoring(overlay: string, change?: (copy: OverlayCopy) => void): K8sObject[] {
  const enable = (copy: OverlayCopy) => {
    enableComponents(copy, ['monitoring']);
    change?.(copy);
  };
  if (change !== undefined) return renderChanged(overlay, enable);
  if (!rendered.has(overlay)) rendered.set(overlay, renderChanged(overlay, enable));
  return rendered.get(overlay)!;
}
const isMonitoring = (object: K8sObject) =>
  object.apiVersion.startsWith('monitoring.coreos.com/') || object.metadata.name === 'fin-grafana-dashboards';

describe('opt-in', () => {
  test.each(OVERLAYS)('%s renders no Prometheus Operator object and no dashboards until the component is added', (overlay) => {
    expect(render(overlay).filter(isMonitoring)).toEqual([]);
    expect(
      withMonitoring(overlay)
        .filter(isMonitoring)
        .map((object) => object.kind)
        .sort(),
    ).toEqual(['ConfigMap', 'PodMonitor', 'PodMonitor', 'PrometheusRule']);
  });

  test("the rules name no runbook host: each runbook_url is the alert's section, the base is release.yaml's `runbooks`", () => {
    const rules = readFileSync(path.join(COMPONENT, 'prometheus-rules.yaml'), 'utf8');
    const urls = [...rules.matchAll(/runbook_url: (.*)$/gm)].map(([, url]) => url!);
    expect(urls.length).toBeGreaterThan(10);
    for (const url of urls) expect(url).toMatch(/^"#fin[a-z0-9]+"$/);
  });
});

beforeAll(loadPromqlParser);
const COMPONENT = path.join(REPO_ROOT, 'k8s/components/monitoring');
const OPERATIONS_DOC = readFileSync(path.join(REPO_ROOT, 'docs/operations.md'), 'utf8');
const KNOWN = exportedMetricNames();

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface PrometheusRule extends K8sObject {
  spec: { groups: { name: string; rules: Rule[] }[] };
}
interface PodMonitor extends K8sObject {
  spec: { selector: LabelSelector; podMetricsEndpoints: { port: string; path: string }[] };
}
interface Deployment extends K8sObject {
  spec: { template: { metadata: { labels: Record<string, string> }; spec: { containers: { ports?: { name?: string }[] }[] } } };
}
interface GrafanaPanel {
  id?: number;
  type: string;
  title: string;
  targets?: { expr: string; refId: string }[];
  panels?: GrafanaPanel[];
}

/** The anchors GitHub (and most Markdown renderers) give the headings of a document. */
function anchors(markdown: string): Set<string> {
  return new Set(
    [...markdown.matchAll(/^#{1,6}\s+(.+)$/gm)].map(([, heading]) =>
      heading!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    ),
  );
}

const DOC_ANCHORS = anchors(OPERATIONS_DOC);
const SEVERITIES = ['critical', 'warning'];

/** What promtool check rules and Alertmanager's templates need of an alert, and our runbook convention. */
function alertProblems(rule: Rule): string[] {
  const problems: string[] = [];
  if (!rule.alert || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(rule.alert))
    problems.push(`alert name ${String(rule.alert)} is not a valid metric name`);
  if (!rule.expr?.trim()) problems.push('no expr');
  if (!rule.for || !/^(0|(\d+(ms|s|m|h|d|w|y))+)$/.test(rule.for)) problems.push(`for ${String(rule.for)} is not a duration`);
  if (!SEVERITIES.includes(rule.labels?.severity ?? ''))
    problems.push(`labels.severity ${String(rule.labels?.severity)} is not one of ${SEVERITIES.join(', ')}`);
  if (!rule.annotations?.summary?.trim()) problems.push('no annotations.summary');
  const runbook = rule.annotations?.runbook_url ?? '';
  const match = /^https:\/\/\S+\/docs\/operations\.md#([\w-]+)$/.exec(runbook);
  if (!match) problems.push(`runbook_url ${runbook || '(none)'} does not point at a section of docs/operations.md`);
  else if (!DOC_ANCHORS.has(match[1]!)) problems.push(`runbook_url's section #${match[1]} is not in docs/operations.md`);
  return problems;
}

function panelsOf(panels: GrafanaPanel[]): GrafanaPanel[] {
  return panels.flatMap((panel) => [panel, ...panelsOf(panel.panels ?? [])]);
}

const DASHBOARD_FILES = readdirSync(path.join(COMPONENT, 'dashboards')).filter((name) => name.endsWith('.json'));
const dashboards: Record<string, { uid: string; title: string; panels: GrafanaPanel[] }> = Object.fromEntries(
  DASHBOARD_FILES.map((name) => [name, JSON.parse(readFileSync(path.join(COMPONENT, 'dashboards', name), 'utf8'))]),
);

describe.each(OVERLAYS)('%s with the monitoring component', (overlay) => {
  const objects = withMonitoring(overlay);
  const byKind = <T extends K8sObject>(kind: string) => objects.filter((object): object is T => object.kind === kind);

  test('validates: the PodMonitor and PrometheusRule against the prometheus-operator schemas, with no unknown field', () => {
    const monitoring = objects.filter(
      (object) => object.apiVersion.startsWith('monitoring.coreos.com/') || object.metadata.name === 'fin-grafana-dashboards',
    );
    expect(monitoring.map((object) => object.kind).sort()).toEqual(['ConfigMap', 'PodMonitor', 'PodMonitor', 'PrometheusRule']);
    const output = execFileSync(process.execPath, [path.join(__dirname, 'support/validate-k8s.mjs')], {
      input: JSON.stringify(monitoring),
      encoding: 'utf8',
    });
    expect(JSON.parse(output)).toEqual([]);
  });

  test('scrapes the port named metrics of every Deployment, at /metrics', () => {
    const monitor = byKind<PodMonitor>('PodMonitor').find((object) => object.metadata.name === 'financial-intelligence-api');
    expect(monitor?.spec.podMetricsEndpoints).toEqual([expect.objectContaining({ port: 'metrics', path: '/metrics' })]);
    const deployments = byKind<Deployment>('Deployment');
    expect(deployments.length).toBeGreaterThan(5);
    for (const deployment of deployments) {
      const { labels } = deployment.spec.template.metadata;
      const ports = deployment.spec.template.spec.containers.flatMap((container) => container.ports ?? []).map((port) => port.name);
      expect({
        deployment: deployment.metadata.name,
        selected: selects(monitor!.spec.selector, labels),
        metricsPort: ports.includes('metrics'),
      }).toEqual({
        deployment: deployment.metadata.name,
        selected: true,
        metricsPort: true,
      });
    }
  });

  test('ships every dashboard in a ConfigMap that Grafana’s sidecar loads', () => {
    const configMap = byKind<K8sObject & { data: Record<string, string> }>('ConfigMap').find(
      (object) => object.metadata.name === 'fin-grafana-dashboards',
    );
    expect(configMap?.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(Object.keys(configMap?.data ?? {}).sort()).toEqual([...DASHBOARD_FILES].sort());
  });
});

describe('alerting rules', () => {
  const [rules] = withMonitoring(OVERLAYS[1]!).filter((object): object is PrometheusRule => object.kind === 'PrometheusRule');
  const all = rules!.spec.groups.flatMap((group) => group.rules);

  test('cover what operators are paged for', () => {
    const exprs = all.map((rule) => rule.expr).join('\n');
    for (const metric of [
      'fin_http_requests_total{status=~"5.."}',
      'fin_http_request_duration_seconds_bucket',
      'fin_jobs_finished_total{outcome="failed"}',
      'fin_events_handled_total{outcome="dead_lettered"}',
      'fin_kafka_consumer_lag',
      'fin_outbox_oldest_unpublished_age_seconds',
      'fin_outbox_relay_leader',
      'fin_db_pool_checkout_wait_seconds_bucket',
      'kube_pod_container_status_restarts_total',
      // Continuous archiving and base backups of the CloudNativePG database (docs/operations.md, "Backups and restore").
      'cnpg_pg_stat_archiver_last_failed_time',
      'cnpg_collector_pg_wal_archive_status',
      'barman_cloud_cloudnative_pg_io_last_available_backup_timestamp',
    ])
      expect(exprs).toContain(metric);
  });

  test('have unique group and alert names', () => {
    const groups = rules!.spec.groups.map((group) => group.name);
    expect(new Set(groups).size).toBe(groups.length);
    const names = all.map((rule) => rule.alert);
    expect(new Set(names).size).toBe(names.length);
  });

  test.each(all.map((rule) => [rule.alert ?? rule.record ?? '?', rule] as const))(
    '%s: alert, expr, for, severity, summary and a runbook section that exists',
    (_name, rule) => {
      expect(alertProblems(rule)).toEqual([]);
    },
  );

  test.each(all.map((rule) => [rule.alert ?? rule.record ?? '?', rule.expr] as const))(
    '%s: its expression parses and reads only exported metrics',
    (_name, expr) => {
      expect(promqlProblems(expr, KNOWN)).toEqual([]);
      expect(checkPromql(expr).metrics.length).toBeGreaterThan(0);
    },
  );
});

describe.each([
  ['k8s/overlays/dev', []],
  ['k8s/overlays/prod', ['cloudnative-pg']],
] as const)("%s's CloudNativePG database, with the monitoring component", (overlay, components) => {
  const objects = withMonitoring(overlay, (copy) => enableComponents(copy, [...components]));
  const [cluster] = objects.filter((object) => object.kind === 'Cluster');
  const monitor = objects.find((object) => object.kind === 'PodMonitor' && object.metadata.name === 'fin-database') as PodMonitor;
  const platform = objects.find((object) => object.metadata.name === 'fin-platform') as K8sObject & { data: Record<string, string> };
  const labels = { 'cnpg.io/cluster': cluster!.metadata.name };
  const instance = pod('fin-database-1', 'financial-intelligence', labels, { metrics: 9187 });

  test("a PodMonitor scrapes the port named metrics (9187) of the Cluster's instances, as CloudNativePG documents", () => {
    expect(selects(monitor.spec.selector, labels)).toBe(true);
    expect(monitor.spec.podMetricsEndpoints.map((endpoint) => endpoint.port)).toEqual(['metrics']);
  });

  test("Prometheus' namespace (platform.yaml) reaches the exporter, and no other namespace does", () => {
    const policies = objects.filter((object) => object.kind === 'NetworkPolicy');
    const prometheus = pod('prometheus-0', platform.data['prometheus-namespace']!, { 'app.kubernetes.io/name': 'prometheus' });
    expect(allowed(policies, prometheus, instance, 9187)).toBe(true);
    expect(allowed(policies, pod('elsewhere', 'default'), instance, 9187)).toBe(false);
    expect(allowed(policies, prometheus, instance, 5432)).toBe(false);
    expect(allowed(policies, address('outside', '203.0.113.7'), instance, 9187)).toBe(false);
  });
});

/** promtool from the PATH (Debian's `prometheus` package ships it), or PROMTOOL; absent, its tests are skipped. */
const PROMTOOL = (() => {
  const candidate = process.env.PROMTOOL ?? 'promtool';
  return spawnSync(candidate, ['--version'], { encoding: 'utf8' }).status === 0 ? candidate : undefined;
})();

describe('promtool', () => {
  const withPromtool = PROMTOOL === undefined ? test.skip : test;
  const [rules] = withMonitoring(OVERLAYS[1]!).filter((object): object is PrometheusRule => object.kind === 'PrometheusRule');
  const run = (args: string[], cwd: string) => spawnSync(PROMTOOL!, args, { cwd, encoding: 'utf8' });

  withPromtool('check rules accepts every group of the rendered PrometheusRule', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'promtool-'));
    try {
      writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups: rules!.spec.groups }));
      const result = run(['check', 'rules', 'rules.yaml'], dir);
      expect({ status: result.status, output: result.stdout + result.stderr }).toEqual({
        status: 0,
        output: expect.stringContaining(`SUCCESS: ${rules!.spec.groups.flatMap((group) => group.rules).length} rules found`),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // infra/test/promtool/<group>.test.yaml: unit tests of one group's alerts on made-up series.
  const UNIT_TESTS = readdirSync(path.join(__dirname, 'promtool')).filter((name) => name.endsWith('.test.yaml'));
  test('the unit tests name groups of the PrometheusRule', () => {
    expect(UNIT_TESTS).toContain('fin-backups.test.yaml');
    for (const file of UNIT_TESTS) expect(rules!.spec.groups.map((group) => group.name)).toContain(file.replace('.test.yaml', ''));
  });

  withPromtool.each(UNIT_TESTS)('test rules %s: its group fires when it should and only then', (file) => {
    const group = file.replace('.test.yaml', '');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'promtool-'));
    try {
      const groups = rules!.spec.groups
        .filter((entry) => entry.name === group)
        .map((entry) => ({ ...entry, rules: entry.rules.map(({ annotations: _annotations, ...rule }) => rule) }));
      writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
      copyFileSync(path.join(__dirname, 'promtool', file), path.join(dir, file));
      const result = run(['test', 'rules', file], dir);
      expect({ status: result.status, output: result.stdout + result.stderr }).toEqual({
        status: 0,
        output: expect.stringContaining('SUCCESS'),
      });
      // And the check is a check: the same tests fail on a rule that never fires.
      const broken = groups.map((entry) => ({ ...entry, rules: entry.rules.map((rule) => ({ ...rule, expr: 'vector(1) == 0' })) }));
      writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups: broken }));
      expect(run(['test', 'rules', file], dir).status).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.each(DASHBOARD_FILES)('dashboard %s', (file) => {
  const dashboard = dashboards[file]!;
  const panels = panelsOf(dashboard.panels);

  test("matches Grafana's dashboard schema (@grafana/schema), panel options included", () => {
    expect(dashboardTypeErrors({ [file]: dashboard })[file]).toEqual([]);
  });

  test('has a uid and unique panel ids, and every panel but rows has queries', () => {
    expect(dashboard.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    const ids = panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of panels)
      if (panel.type !== 'row')
        expect({ panel: panel.title, queries: (panel.targets ?? []).length > 0 }).toEqual({ panel: panel.title, queries: true });
  });

  test.each(panels.flatMap((panel) => (panel.targets ?? []).map((target) => [`${panel.title} (${target.refId})`, target.expr] as const)))(
    '%s: the query parses and reads only exported metrics',
    (_panel, expr) => {
      expect(promqlProblems(grafanaToPromql(expr), KNOWN)).toEqual([]);
    },
  );
});

/** The metric names a document mentions (`fin_…`, `kube_…`), histograms by their base name. */
function metricsNamed(markdown: string): string[] {
  return [...new Set([...markdown.matchAll(/\b((?:fin|kube)_[a-z0-9_]+)\b/g)].map(([, name]) => name!))].sort();
}

/** The series a metric is read through: itself, or a histogram's _bucket, _count and _sum. */
const seriesOf = (metric: string) => [metric, `${metric}_bucket`, `${metric}_count`, `${metric}_sum`];

describe('what the runbooks name', () => {
  const named = metricsNamed(OPERATIONS_DOC);
  const queries = Object.values(dashboards).flatMap((dashboard) =>
    panelsOf(dashboard.panels).flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr }))),
  );
  const read = (metric: string) =>
    queries
      .filter(({ expr }) => checkPromql(grafanaToPromql(expr)).metrics.some((name) => seriesOf(metric).includes(name)))
      .map(({ panel }) => panel);

  test("every metric docs/operations.md tells an operator to look at is exported (or kube-state-metrics' own)", () => {
    expect(named).toEqual(expect.arrayContaining(['fin_model_tokens_total', 'fin_webhook_attempts_total']));
    // Exported by a service, or by kube-state-metrics / Prometheus itself: the PromQL check knows both.
    for (const metric of named)
      expect({ metric, exported: seriesOf(metric).some((series) => promqlProblems(series, KNOWN).length === 0) }).toEqual({
        metric,
        exported: true,
      });
  });

  test.each(named)('%s has a dashboard panel', (metric) => {
    expect(read(metric)).not.toEqual([]);
  });

  test('the check finds a metric without a panel', () => {
    expect(read('fin_model_tokens_total')).toEqual(['Model tokens billed by kind']);
    expect(read('fin_db_pool_checkout_wait_seconds')).toContain('Checkout waits by pool');
    expect(KNOWN.has('fin_reaper_actions_total') && read('fin_no_such_metric')).toEqual([]);
  });
});

describe("the runbook links: release.yaml's runbooks, then the alert", () => {
  const runbookUrls = (objects: K8sObject[]) =>
    objects
      .filter((object): object is PrometheusRule => object.kind === 'PrometheusRule')
      .flatMap((rule) => rule.spec.groups.flatMap((group) => group.rules.map((entry) => entry.annotations?.runbook_url ?? '')));

  test.each(OVERLAYS)("%s: every runbook_url is release.yaml's runbooks and the alert's section", (overlay) => {
    const objects = withMonitoring(overlay);
    const release = objects.find((object) => object.kind === 'ConfigMap' && object.metadata.name === 'fin-release') as K8sObject & {
      data: { runbooks: string };
    };
    expect(release.data.runbooks).toMatch(/^https:\/\/\S+\/docs\/operations\.md$/);
    const urls = runbookUrls(objects);
    expect(urls.length).toBeGreaterThan(10);
    for (const url of urls)
      expect(url).toMatch(new RegExp(`^${release.data.runbooks.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}#fin[a-z0-9]+$`));
  });

  test('an overlay that sets another runbooks base links every alert there', () => {
    const base = 'https://git.internal.example/platform/fin/-/blob/main/docs/operations.md';
    const objects = withMonitoring('k8s/overlays/prod', (copy) => {
      const release = parseDocument(copy.read('release.yaml'));
      release.setIn(['data', 'runbooks'], base);
      copy.write('release.yaml', release.toString());
    });
    const urls = runbookUrls(objects);
    expect(urls.length).toBeGreaterThan(10);
    for (const url of urls) expect(url.startsWith(`${base}#`)).toBe(true);
  });
});

describe('the checkers themselves', () => {
  test('the PromQL check finds syntax errors, range functions over instant vectors and metrics nobody exports', () => {
    expect(promqlProblems('sum(rate(fin_http_requests_total[5m]))', KNOWN)).toEqual([]);
    expect(promqlProblems('sum(rate(fin_http_requests_total[5m])', KNOWN)[0]).toMatch(/^syntax error/);
    expect(promqlProblems('sum by (service) (rate(fin_http_requests_total[5m])) >', KNOWN)[0]).toMatch(/^syntax error/);
    expect(promqlProblems('rate(fin_http_requests_total[5m]) bogus', KNOWN)[0]).toMatch(/^syntax error/);
    expect(promqlProblems('rate(fin_http_requests_total)', KNOWN)).toEqual([
      'rate() takes a range vector (a selector with [duration] or a subquery), got fin_http_requests_total',
    ]);
    expect(promqlProblems('sum(fin_http_request_total)', KNOWN)).toEqual(['reads fin_http_request_total, which no service exports']);
    expect(promqlProblems('{__name__="fin_no_such_metric"}', KNOWN)).toEqual(['reads fin_no_such_metric, which no service exports']);
    expect(promqlProblems(grafanaToPromql('rate(fin_http_requests_total[$__rate_interval])'), KNOWN)).toEqual([]);
    expect(promqlProblems('rate(fin_http_requests_total[$window])', KNOWN)[0]).toMatch(/^syntax error/);
  });

  test('the metric names come from the catalog, with the series a histogram is exported as', () => {
    expect(KNOWN).toEqual(expect.any(Set));
    for (const name of [
      'fin_http_requests_total',
      'fin_http_request_duration_seconds_bucket',
      'fin_http_request_duration_seconds_count',
      'fin_build_info',
      'fin_process_resident_memory_bytes',
    ])
      expect(KNOWN.has(name)).toBe(true);
    expect(KNOWN.has('fin_http_request_duration_seconds')).toBe(false);
  });

  test('the alert check finds missing fields and runbook sections that do not exist', () => {
    const good = all();
    expect(alertProblems(good)).toEqual([]);
    expect(alertProblems({ ...good, for: undefined })).toEqual(['for undefined is not a duration']);
    expect(alertProblems({ ...good, labels: { severity: 'page' } })).toEqual(['labels.severity page is not one of critical, warning']);
    expect(
      alertProblems({
        ...good,
        annotations: { ...good.annotations, runbook_url: 'https://example.com/docs/operations.md#no-such-runbook' },
      }),
    ).toEqual(["runbook_url's section #no-such-runbook is not in docs/operations.md"]);

    function all(): Rule {
      return {
        alert: 'FinExample',
        expr: 'up == 0',
        for: '5m',
        labels: { severity: 'warning' },
        annotations: { summary: 'example', runbook_url: 'https://example.com/docs/operations.md#runbooks' },
      };
    }
  });

  test('the dashboard check refuses a misspelt field, a wrong type and a panel without its required options', () => {
    const [file] = DASHBOARD_FILES;
    const dashboard = dashboards[file!]!;
    const [first, ...rest] = dashboard.panels.filter((panel) => panel.type === 'timeseries') as (GrafanaPanel & Record<string, unknown>)[];
    const errors = dashboardTypeErrors({
      misspelt: { ...dashboard, refersh: '30s' },
      wrongType: { ...dashboard, schemaVersion: '39' },
      noOptions: { ...dashboard, panels: [{ ...first, options: {} }, ...rest] },
      good: dashboard,
    });
    expect(errors.misspelt?.join(' ')).toMatch(/'"refersh"' does not exist/);
    expect(errors.wrongType?.join(' ')).toContain("Type 'string' is not assignable to type 'number'");
    expect(errors.noOptions?.join(' ')).toMatch(/legend/);
    expect(errors.good).toEqual([]);
  });
});
