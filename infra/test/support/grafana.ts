// Grafana dashboards checked against Grafana's own dashboard schema, offline. @grafana/schema ships the TypeScript
// types Grafana generates from its CUE schema (Dashboard, Panel, RowPanel and each panel plugin's Options); a
// dashboard's JSON is type-checked as an object literal of those types with the TypeScript compiler, so a missing
// required field, a wrong type or a misspelt field (the excess-property check) is an error naming the field. The
// same approach as validate-k8s.mjs takes for Kubernetes objects. The schema's string enums are read as the strings
// they stand for, as in the JSON Grafana saves.
import path from 'node:path';
import ts from 'typescript';

/**
 * The types a dashboard is checked against: Grafana's Dashboard with each panel narrowed by its `type` to that
 * panel plugin's options, and targets that are Prometheus queries (their type lives in Grafana's Prometheus plugin,
 * not in @grafana/schema: these are the fields of its PromQuery that the dashboards use).
 */
const DECLARATIONS = `
import type { Dashboard, DataSourceRef, Panel, RowPanel } from '@grafana/schema';
import type { Options as TimeSeriesOptions } from '@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen';
import type { Options as StatOptions } from '@grafana/schema/dist/esm/raw/composable/stat/panelcfg/x/StatPanelCfg_types.gen';
import type { Options as TableOptions } from '@grafana/schema/dist/esm/raw/composable/table/panelcfg/x/TablePanelCfg_types.gen';

interface PrometheusQuery {
  refId: string;
  datasource?: DataSourceRef;
  expr: string;
  legendFormat?: string;
  range?: boolean;
  instant?: boolean;
  format?: 'time_series' | 'table' | 'heatmap';
  hide?: boolean;
}
type PanelOf<Type extends string, Options> = Omit<Panel, 'type' | 'options' | 'targets'> & {
  type: Type;
  options: Options;
  targets: PrometheusQuery[];
};
type CheckedPanel = PanelOf<'timeseries', TimeSeriesOptions> | PanelOf<'stat', StatOptions> | PanelOf<'table', TableOptions> | RowPanel;
/**
 * The types as JSON spells them: the schema's string enums (SortOrder.Descending) are their values ('desc'), as
 * Grafana writes and reads them; everything else as it is.
 */
type Json<T> = T extends string
  ? \`\${T}\`
  : T extends readonly (infer Item)[]
    ? Json<Item>[]
    : T extends object
      ? { [Key in keyof T]: Json<T[Key]> }
      : T;
type CheckedDashboard = Json<Omit<Dashboard, 'panels'> & { panels: CheckedPanel[] }>;
`;

/** Type errors of each dashboard (by file name); an empty list for one that matches the schema. */
export function dashboardTypeErrors(dashboards: Record<string, unknown>): Record<string, string[]> {
  const names = Object.keys(dashboards);
  // Beside this file, so '@grafana/schema' resolves from infra/node_modules.
  const file = path.join(__dirname, '__dashboards__.ts');
  const header = DECLARATIONS.trim().split('\n');
  const body = names.map((name, index) => `export const d${index}: CheckedDashboard = ${JSON.stringify(dashboards[name])};`);
  const source = [...header, ...body].join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (name, language, ...rest) =>
    name === file ? ts.createSourceFile(name, source, language) : getSourceFile(name, language, ...rest);
  host.fileExists = (name) => name === file || fileExists(name);
  host.readFile = (name) => (name === file ? source : readFile(name));
  const program = ts.createProgram([file], options, host);
  const errors: Record<string, string[]> = Object.fromEntries(names.map((name) => [name, []]));
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
    const line =
      diagnostic.file?.fileName === file && diagnostic.start !== undefined
        ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line
        : -1;
    const name = line >= header.length ? names[line - header.length] : undefined;
    // An error outside the dashboards (the declarations, a missing package) fails every one of them.
    for (const target of name === undefined ? names : [name]) errors[target]?.push(message);
  }
  return errors;
}
