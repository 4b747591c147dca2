// What gets deployed, in one table the image, Compose and Kubernetes tests share, and the services' own config
// shapes, loaded from their sources so every check runs against what the processes actually parse.
import path from 'node:path';
import { isSecret, parseConfig } from '@fin/config';
import type { JobType } from '@fin/events';
import type { z } from 'zod';

export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');

export type Role = 'api' | 'worker';

export interface Deployable {
  /** Folder under services/, SERVICE build argument, image name suffix. */
  service: string;
  /** api: serves HTTP behind the gateway (the gateway itself: the public entry); worker: consumes job requests. */
  roles: readonly Role[];
  /** For products with a worker: the job type whose requests it consumes. */
  jobType?: JobType;
  /**
   * Calls customers' APIs without the model: the portal's "test" button, the jobs service's webhook deliveries.
   * (Every process that runs the AI engine with customer tools calls them too; see callsCustomerApis.)
   */
  testsCustomerTools?: boolean;
}

export const DEPLOYABLES: readonly Deployable[] = [
  { service: 'gateway', roles: ['api'] },
  { service: 'jobs', roles: ['api'], testsCustomerTools: true },
  { service: 'news', roles: ['api', 'worker'], jobType: 'news' },
  { service: 'stock-report', roles: ['api', 'worker'], jobType: 'stock-report' },
  { service: 'analysis', roles: ['api', 'worker'], jobType: 'analysis' },
  { service: 'chat', roles: ['api'] },
  { service: 'portal', roles: ['api'], testsCustomerTools: true },
  { service: 'mcp', roles: ['api'] },
];

/**
 * The name a role runs under, in Compose and Kubernetes alike: `<service>-api` and `<service>-worker` for products
 * with both roles, the service's name otherwise. The gateway's *_URL values use it as the host name.
 */
export function workloadName({ service, roles }: Deployable, role: Role): string {
  return roles.length > 1 ? `${service}-${role}` : service;
}

/** Folders under services/ that are deliberately not deployed, and why. */
export const NOT_DEPLOYED: Readonly<Record<string, string>> = {
  standalone: 'the single-process `npm start` launcher for laptops, not deployed',
};

/**
 * Whether a process calls customers' APIs (customer tools, anywhere on the internet): the portal's test button,
 * and every process that runs the AI engine with customer tools, i.e. that holds both the model's key and the
 * customer-tools encryption key (the product workers, analysis-api, which runs streamed analyses itself, and chat).
 */
export function callsCustomerApis(deployable: Deployable, env: Record<string, string>): boolean {
  if (deployable.testsCustomerTools === true) return true;
  return env.ANTHROPIC_API_KEY !== undefined && env.CUSTOMER_TOOLS_ENCRYPTION_KEY !== undefined;
}

/** The customer-tools setting that exists for tests only; no deployment file may set it. */
export const TEST_ONLY_VARIABLES = ['CUSTOMER_TOOLS_ALLOW_LOOPBACK'] as const;

export type ConfigShape = Record<string, z.ZodType>;

/** `stock-report` → `stockReport`, the prefix of the service's exported `…ConfigShape`. */
function camel(service: string): string {
  return service.replace(/-([a-z])/g, (_match, letter: string) => letter.toUpperCase());
}

/** `stock-report` → `STOCK_REPORT`, the prefix of the service's own variables (`STOCK_REPORT_ROLE`, `STOCK_REPORT_URL`). */
export function envPrefix(service: string): string {
  return service.toUpperCase().replace(/-/g, '_');
}

/** The zod shape the service's main.ts parses its environment with (services/<service>/src/config.ts). */
export async function loadConfigShape(service: string): Promise<ConfigShape> {
  const module = (await import(path.join(REPO_ROOT, 'services', service, 'src', 'config.ts'))) as Record<string, unknown>;
  const name = `${camel(service)}ConfigShape`;
  const shape = module[name];
  if (typeof shape !== 'object' || shape === null) throw new Error(`services/${service}/src/config.ts exports no ${name}`);
  return shape as ConfigShape;
}

/** The variable that selects a product's role, when the service has roles. */
export function roleVariable(shape: ConfigShape, service: string): string | undefined {
  const name = `${envPrefix(service)}_ROLE`;
  return name in shape ? name : undefined;
}

/** Variables the service's config marks as secrets (`secret(…)` of @fin/config): never a literal in a deployment file. */
export function secretVariables(shape: ConfigShape): string[] {
  return Object.entries(shape)
    .filter(([, field]) => isSecret(field))
    .map(([name]) => name);
}

/** The value the service listens on when PORT (or METRICS_PORT, for the metrics listener) is unset. */
export function defaultPort(shape: ConfigShape, variable: 'PORT' | 'METRICS_PORT' = 'PORT'): number {
  const field = shape[variable];
  if (!field) throw new Error(`the config shape has no ${variable}`);
  return parseConfig({ [variable]: field }, {})[variable] as number;
}

/** Parses `env` as the service would; throws ConfigError naming every bad or missing variable. */
export function parseServiceConfig(shape: ConfigShape, env: Record<string, string>): Record<string, unknown> {
  return parseConfig(shape, env);
}
