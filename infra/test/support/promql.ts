// A promtool-like check of PromQL expressions, offline: Prometheus's own grammar (@prometheus-io/lezer-promql,
// the parser of Prometheus' web UI) finds syntax errors, and a walk of the tree names every metric an expression
// reads, so a test can compare them with what the services export. Lezer parsers recover from errors instead of
// throwing: an error is a node of the error type (shown as ⚠) somewhere in the tree.
import { registry } from '@fin/metrics';
import type * as LezerPromql from '@prometheus-io/lezer-promql' with { 'resolution-mode': 'import' };

type Parser = (typeof LezerPromql)['parser'];
type SyntaxNode = ReturnType<Parser['parse']>['topNode'];

let loaded: Parser | undefined;

/**
 * Loads the parser (an ES module with a CommonJS build: imported dynamically from this CommonJS test code). Call
 * once, in a beforeAll, before checking expressions.
 */
export async function loadPromqlParser(): Promise<void> {
  loaded ??= (await import('@prometheus-io/lezer-promql')).parser;
}

function promqlParser(): Parser {
  if (!loaded) throw new Error('loadPromqlParser() first');
  return loaded;
}

/** Functions whose argument is a range vector: `rate(fin_x_total)` without `[5m]` is wrong, though it parses. */
const RANGE_FUNCTIONS = new Set([
  'rate',
  'irate',
  'increase',
  'delta',
  'idelta',
  'deriv',
  'changes',
  'resets',
  'predict_linear',
  'holt_winters',
  'double_exponential_smoothing',
  'avg_over_time',
  'min_over_time',
  'max_over_time',
  'sum_over_time',
  'count_over_time',
  'quantile_over_time',
  'stddev_over_time',
  'stdvar_over_time',
  'last_over_time',
  'present_over_time',
  'absent_over_time',
]);

/**
 * Metrics that others export and the rules may read: kube-state-metrics' and Prometheus' own, and the CloudNativePG
 * instances' exporter (the PodMonitor fin-database): its default pg_stat_archiver query and collector
 * (cloudnative-pg config/manager/default-monitoring.yaml; https://cloudnative-pg.io/documentation/current/monitoring/)
 * and the Barman Cloud plugin's (https://cloudnative-pg.io/plugin-barman-cloud/docs/observability).
 */
const EXTERNAL_METRICS: ReadonlySet<string> = new Set([
  'up',
  'kube_pod_container_status_restarts_total',
  'kube_pod_container_status_waiting_reason',
  'cnpg_pg_stat_archiver_last_archived_time',
  'cnpg_pg_stat_archiver_last_failed_time',
  'cnpg_collector_pg_wal_archive_status',
  'barman_cloud_cloudnative_pg_io_last_available_backup_timestamp',
]);

/**
 * The names of every series the services export: the catalog of @fin/metrics (the registry every process
 * serves), a histogram as its _bucket, _sum and _count series, a summary as itself, _sum and _count.
 */
export function exportedMetricNames(): Set<string> {
  const names = new Set<string>();
  for (const metric of registry.getMetricsAsArray()) {
    const { name, type } = metric as unknown as { name: string; type: string };
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    else if (type === 'summary') for (const suffix of ['', '_sum', '_count']) names.add(name + suffix);
    else names.add(name);
  }
  return names;
}

export interface PromqlCheck {
  /** Syntax errors and misuse, with the position in the expression; empty when it is valid. */
  errors: string[];
  /** Every metric name the expression selects. */
  metrics: string[];
}

function text(expression: string, node: SyntaxNode): string {
  return expression.slice(node.from, node.to);
}

/** The first argument of a function call (FunctionCall > FunctionCallBody > argument). */
function firstArgument(call: SyntaxNode): SyntaxNode | null {
  const body = call.getChild('FunctionCallBody');
  let child = body?.firstChild ?? null;
  // A scalar parameter comes first for some functions (quantile_over_time(0.9, …), predict_linear's is second).
  while (child && (child.name === 'NumberDurationLiteral' || child.name === '(' || child.name === ',')) child = child.nextSibling;
  return child;
}

/** Parses `expression` and reports its errors and the metrics it reads. */
export function checkPromql(expression: string): PromqlCheck {
  const errors: string[] = [];
  const metrics: string[] = [];
  if (expression.trim() === '') return { errors: ['empty expression'], metrics };
  const tree = promqlParser().parse(expression);
  tree.iterate({
    enter: (ref) => {
      const node = ref.node;
      if (ref.type.isError) {
        errors.push(`syntax error at ${ref.from}: ${JSON.stringify(expression.slice(Math.max(0, ref.from - 20), ref.to + 20))}`);
        return;
      }
      if (ref.name === 'VectorSelector') {
        const name = node.getChild('Identifier');
        if (name) metrics.push(text(expression, name));
      }
      if (ref.name === 'UnquotedLabelMatcher' || ref.name === 'QuotedLabelMatcher') {
        const label = node.getChild('LabelName');
        const value = node.getChild('StringLiteral');
        if (label && value && text(expression, label) === '__name__') metrics.push(JSON.parse(text(expression, value)) as string);
      }
      if (ref.name === 'FunctionCall') {
        const identifier = node.getChild('FunctionIdentifier');
        const name = identifier ? text(expression, identifier) : '';
        const argument = firstArgument(node);
        if (RANGE_FUNCTIONS.has(name) && argument && argument.name !== 'MatrixSelector' && argument.name !== 'SubqueryExpr')
          errors.push(`${name}() takes a range vector (a selector with [duration] or a subquery), got ${text(expression, argument)}`);
      }
    },
  });
  return { errors, metrics };
}

/**
 * Grafana's built-in interval variables, replaced by a duration before parsing, as Grafana itself does before it
 * sends the query. Any other `$variable` is an error: the dashboards use none.
 */
export function grafanaToPromql(expression: string): string {
  return expression.replace(/\$__(rate_interval|interval|range)\b/g, '5m');
}

/** Errors of `expression` plus every metric it reads that is neither exported by the services nor external. */
export function promqlProblems(expression: string, known: ReadonlySet<string>): string[] {
  const { errors, metrics } = checkPromql(expression);
  const unknown = metrics.filter((metric) => !known.has(metric) && !EXTERNAL_METRICS.has(metric));
  return [...errors, ...unknown.map((metric) => `reads ${metric}, which no service exports`)];
}
