// docker-compose.yml, checked without a Docker engine: against the Compose Specification's JSON schema (the copy
// dclint ships, downloaded from compose-spec/compose-spec), and against the services themselves: every
// container's environment (with .env.example substituted) is parsed by that service's own config shape, and every
// URL, port, broker address, healthcheck and dependency has to line up.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eventCatalog } from '@fin/events';
import Ajv from 'ajv';
import draft07 from 'ajv/dist/refs/json-schema-draft-07.json';
import {
  dependenciesOf,
  environmentOf,
  interpolate,
  readCompose,
  readEnvFile,
  referencedVariables,
  type ComposeFile,
  type ComposeService,
} from './support/compose';
import {
  DEPLOYABLES,
  REPO_ROOT,
  TEST_ONLY_VARIABLES,
  envPrefix,
  loadConfigShape,
  parseServiceConfig,
  roleVariable,
  secretVariables,
  workloadName,
  type ConfigShape,
  type Deployable,
  type Role,
} from './support/deployables';
import { ADMIN, HEALTHCHECK, MIGRATE } from './support/image-paths';

const COMPOSE_FILE = path.join(REPO_ROOT, 'docker-compose.yml');
const ENV_EXAMPLE = path.join(REPO_ROOT, '.env.example');
const envExample = readEnvFile(ENV_EXAMPLE);
/** The secrets .env.example holds placeholders for: every service refuses to start with those. */
const PLACEHOLDER_SECRETS = ['INTERNAL_SIGNING_SECRET', 'PORTAL_SESSION_SECRET', 'CUSTOMER_TOOLS_ENCRYPTION_KEY'];
/** .env as the user makes it: .env.example with its placeholder secrets replaced by values of their own. */
const envFile: Record<string, string> = {
  ...envExample,
  INTERNAL_SIGNING_SECRET: randomBytes(32).toString('hex'),
  PORTAL_SESSION_SECRET: randomBytes(32).toString('hex'),
  CUSTOMER_TOOLS_ENCRYPTION_KEY: `k1:${randomBytes(32).toString('base64')}`,
};
const compose: ComposeFile = readCompose(COMPOSE_FILE, envFile);

interface AppContainer {
  name: string;
  deployable: Deployable;
  role: Role;
  definition: ComposeService;
  env: Record<string, string>;
  shape: ConfigShape;
}

let containers: AppContainer[];

beforeAll(async () => {
  containers = [];
  for (const deployable of DEPLOYABLES) {
    const shape = await loadConfigShape(deployable.service);
    for (const role of deployable.roles) {
      const name = workloadName(deployable, role);
      const definition = compose.services[name];
      if (!definition) throw new Error(`docker-compose.yml has no service ${name}`);
      containers.push({ name, deployable, role, definition, env: environmentOf(definition), shape });
    }
  }
});

const service = (name: string): ComposeService => {
  const definition = compose.services[name];
  if (!definition) throw new Error(`docker-compose.yml has no service ${name}`);
  return definition;
};

describe('docker-compose.yml', () => {
  test('is valid against the Compose Specification', () => {
    const schemaFile = path.join(path.dirname(require.resolve('dclint/package.json')), 'schemas', 'compose.schema.json');
    const schema = JSON.parse(readFileSync(schemaFile, 'utf8')) as Record<string, unknown>;
    expect(schema.title).toBe('Compose Specification');
    // The schema uses annotations of later drafts ("deprecated"); strict mode would refuse them, not the file. It
    // names draft-07 by its https address, which Ajv knows only under http.
    const ajv = new Ajv({ allErrors: true, strict: false });
    ajv.addMetaSchema(draft07, String(schema.$schema));
    const validate = ajv.compile(schema);
    const valid = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  test('runs every role of every deployable as a service of its own, built from the one Dockerfile', () => {
    for (const { name, deployable, definition } of containers) {
      expect({ name, build: definition.build }).toEqual({ name, build: { context: '.', args: { SERVICE: deployable.service } } });
      expect(definition.image).toBe(`fin-${deployable.service}:local`);
    }
    const oneShots = ['kafka-topics', 'migrate', 'admin'];
    expect(Object.keys(compose.services).sort()).toEqual(
      [...containers.map((container) => container.name), 'postgres', 'kafka', ...oneShots].sort(),
    );
  });

  test('gives every container an environment its service accepts, naming nothing the service does not read', () => {
    for (const { name, env, shape, role, deployable } of containers) {
      expect({ name, unknown: Object.keys(env).filter((key) => !(key in shape)) }).toEqual({ name, unknown: [] });
      const config = parseServiceConfig(shape, env);
      const roleVar = roleVariable(shape, deployable.service);
      if (roleVar) expect({ name, role: config[roleVar] }).toEqual({ name, role });
      if (role === 'api') expect({ name, host: config.HOST }).toEqual({ name, host: '0.0.0.0' });
      // The metrics listener on every interface (reachable on the Compose network, not published), at a stated port.
      if ('METRICS_HOST' in shape)
        expect({ name, metricsHost: config.METRICS_HOST, metricsPort: env.METRICS_PORT }).toEqual({
          name,
          metricsHost: '0.0.0.0',
          metricsPort: expect.stringMatching(/^\d+$/) as unknown,
        });
    }
  });

  test('takes every secret from .env, one value for every service that reads it', () => {
    const names = [...new Set(containers.flatMap(({ shape }) => secretVariables(shape)))];
    expect(names).toEqual(
      expect.arrayContaining([
        'INTERNAL_SIGNING_SECRET',
        'PORTAL_SESSION_SECRET',
        'ANTHROPIC_API_KEY',
        'CUSTOMER_TOOLS_ENCRYPTION_KEY',
        'CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS',
      ]),
    );
    const marked = Object.fromEntries(names.map((name) => [name, `from-env-file-${name}`]));
    const withMarks = readCompose(COMPOSE_FILE, { ...envFile, ...marked });
    for (const { name, shape } of containers) {
      const env = environmentOf(withMarks.services[name]!);
      for (const secret of secretVariables(shape)) {
        if (!(secret in env)) continue;
        expect({ name, secret, value: env[secret] }).toEqual({ name, secret, value: marked[secret] });
      }
    }
    // The customer-tools key seals what the portal stores and opens it in every product service: all hold it.
    for (const { name, shape, env } of containers) {
      if ('CUSTOMER_TOOLS_ENCRYPTION_KEY' in shape)
        expect({ name, keys: [env.CUSTOMER_TOOLS_ENCRYPTION_KEY, env.CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS] }).toEqual({
          name,
          keys: [envFile.CUSTOMER_TOOLS_ENCRYPTION_KEY, envFile.CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS],
        });
    }
    // The session secret is the portal's alone.
    for (const { name, env } of containers) {
      expect({ name, session: 'PORTAL_SESSION_SECRET' in env }).toEqual({ name, session: name === 'portal' });
    }
  });

  test('sets no test-only variable: customer tools never reach loopback addresses', () => {
    const everything = JSON.stringify(readCompose(COMPOSE_FILE, envExample));
    for (const variable of TEST_ONLY_VARIABLES) {
      expect({ variable, inCompose: everything.includes(variable), inEnvExample: variable in envExample }).toEqual({
        variable,
        inCompose: false,
        inEnvExample: false,
      });
    }
    for (const { name, env, shape } of containers) {
      if ('CUSTOMER_TOOLS_ALLOW_LOOPBACK' in shape)
        expect({ name, loopback: parseServiceConfig(shape, env).CUSTOMER_TOOLS_ALLOW_LOOPBACK }).toEqual({ name, loopback: false });
    }
  });

  test('has the gateway reach every API at its Compose name and PORT', () => {
    const gateway = containers.find((container) => container.name === 'gateway')!;
    const urls = Object.keys(gateway.env).filter((key) => key.endsWith('_URL') && key !== 'DATABASE_URL');
    const apis = containers.filter((container) => container.role === 'api' && container.name !== 'gateway');
    expect(urls.sort()).toEqual(apis.map((api) => `${envPrefix(api.deployable.service)}_URL`).sort());
    for (const api of apis) {
      const port = parseServiceConfig(api.shape, api.env).PORT as number;
      expect(gateway.env[`${envPrefix(api.deployable.service)}_URL`]).toBe(`http://${api.name}:${port}`);
    }
  });

  test("points every service at Kafka's internal listener and at the PostgreSQL service with its credentials", () => {
    const kafka = environmentOf(service('kafka'));
    const listener = kafka.KAFKA_INTER_BROKER_LISTENER_NAME;
    const advertised = (kafka.KAFKA_ADVERTISED_LISTENERS ?? '').split(',').find((entry) => entry.startsWith(`${listener}://`));
    expect(advertised).toBe('PLAINTEXT://kafka:9092');
    const postgres = environmentOf(service('postgres'));
    const expectedDatabase = `postgresql://${postgres.POSTGRES_USER}:${postgres.POSTGRES_PASSWORD}@postgres:5432/${postgres.POSTGRES_DB}`;
    for (const { name, env, shape } of containers) {
      if ('KAFKA_BROKERS' in shape)
        expect({ name, brokers: env.KAFKA_BROKERS }).toEqual({ name, brokers: advertised?.replace(`${listener}://`, '') });
      // Every service with a database (all but the MCP server) uses the one PostgreSQL service.
      if ('DATABASE_URL' in shape) expect({ name, database: env.DATABASE_URL }).toEqual({ name, database: expectedDatabase });
      else expect({ name, database: env.DATABASE_URL }).toEqual({ name, database: undefined });
    }
    for (const oneShot of ['migrate', 'admin']) expect(environmentOf(service(oneShot)).DATABASE_URL).toBe(expectedDatabase);
  });

  test('publishes only the gateway (and, for the host, PostgreSQL and Kafka), on 127.0.0.1, at their own ports', () => {
    const published = Object.entries(compose.services)
      .filter(([, definition]) => definition.ports !== undefined)
      .map(([name]) => name);
    expect(published.sort()).toEqual(['gateway', 'kafka', 'postgres']);
    const gateway = containers.find((container) => container.name === 'gateway')!;
    const port = parseServiceConfig(gateway.shape, gateway.env).PORT as number;
    expect(service('gateway').ports).toEqual([`127.0.0.1:${envExample.GATEWAY_HOST_PORT}:${port}`]);
    expect(service('postgres').ports).toEqual([`127.0.0.1:${envExample.POSTGRES_HOST_PORT}:5432`]);
    // Kafka's host listener is advertised at the published port, or host clients would be sent elsewhere.
    expect(service('kafka').ports).toEqual([`127.0.0.1:${envExample.KAFKA_HOST_PORT}:19092`]);
    expect(environmentOf(service('kafka')).KAFKA_ADVERTISED_LISTENERS).toContain(`EXTERNAL://127.0.0.1:${envExample.KAFKA_HOST_PORT}`);
  });

  test("health-checks every container with the image's script: APIs on PORT, workers on their metrics listener", () => {
    for (const { name, role, env, shape, definition, deployable } of containers) {
      expect({ name, test: definition.healthcheck?.test, disabled: definition.healthcheck?.disable }).toEqual({
        name,
        test: ['CMD', ...HEALTHCHECK],
        disabled: undefined,
      });
      // The script reads PORT (a worker role: METRICS_PORT) from the container's environment: it probes where the
      // service listens. A worker is recognised by its role variable, which the script reads too.
      const variable = role === 'api' ? 'PORT' : 'METRICS_PORT';
      expect({ name, [variable]: env[variable] }).toEqual({ name, [variable]: expect.stringMatching(/^\d+$/) as unknown });
      if (role === 'worker') {
        expect({ name, metrics: 'METRICS_PORT' in shape, roleVariable: env[`${envPrefix(deployable.service)}_ROLE`] }).toEqual({
          name,
          metrics: true,
          roleVariable: 'worker',
        });
      }
    }
  });

  test('runs the PostgreSQL of the docs and of CloudNativePG: the same major, Debian (glibc) like its images, a pinned minor', () => {
    const image = service('postgres').image ?? '';
    const match = /^postgres:(?<major>\d+)\.(?<minor>\d+)-(?<flavour>[a-z]+)$/.exec(image);
    expect({ image, pinned: match !== null }).toEqual({ image, pinned: true });
    // musl's collations order text differently from glibc's: an index built on Alpine is not one built in production.
    expect(match!.groups!.flavour).not.toBe('alpine');
    const deploymentDoc = readFileSync(path.join(REPO_ROOT, 'docs/deployment.md'), 'utf8');
    expect(deploymentDoc).toContain(`\`${image}\``);
    for (const file of ['k8s/overlays/dev/postgres.yaml', 'k8s/components/cloudnative-pg/postgres.yaml']) {
      const cnpg = /imageName: ghcr\.io\/cloudnative-pg\/postgresql:(\d+)/.exec(readFileSync(path.join(REPO_ROOT, file), 'utf8'));
      expect({ file, major: cnpg?.[1] }).toEqual({ file, major: match!.groups!.major });
    }
  });

  test('health-checks Kafka with a Kafka request written by bash, without starting a JVM', () => {
    const test = service('kafka').healthcheck?.test;
    expect(Array.isArray(test) && test.slice(0, 3)).toEqual(['CMD', 'bash', '-c']);
    const script = (test as string[])[3]!;
    // No Kafka CLI script (each starts a JVM): an ApiVersions request (key 18) on the internal listener.
    expect(script).not.toMatch(/\.sh\b|java|kafka-/);
    expect(script).toContain('/dev/tcp/127.0.0.1/9092');
    expect(script).toContain('\\0\\22');
    expect(service('kafka').healthcheck).toMatchObject({ interval: '10s' });
  });

  test('starts a service only once what it needs is ready', () => {
    const healthChecked = (name: string) => {
      const { healthcheck } = service(name);
      return healthcheck !== undefined && healthcheck.disable !== true;
    };
    for (const [name, definition] of Object.entries(compose.services)) {
      for (const [dependency, condition] of Object.entries(dependenciesOf(definition))) {
        expect(compose.services[dependency]).toBeDefined();
        if (condition === 'service_healthy')
          expect({ name, dependency, healthChecked: healthChecked(dependency) }).toEqual({ name, dependency, healthChecked: true });
      }
    }
    for (const { name, definition, shape } of containers) {
      const dependencies = dependenciesOf(definition);
      expect({ name, migrate: dependencies.migrate }).toEqual({
        name,
        migrate: 'DATABASE_URL' in shape ? 'service_completed_successfully' : undefined,
      });
      if ('KAFKA_BROKERS' in shape)
        expect({ name, topics: dependencies['kafka-topics'] }).toEqual({ name, topics: 'service_completed_successfully' });
    }
    expect(dependenciesOf(service('migrate'))).toEqual({ postgres: 'service_healthy' });
    expect(dependenciesOf(service('kafka-topics'))).toEqual({ kafka: 'service_healthy' });
    // The gateway comes up when the APIs it routes to are healthy.
    const gatewayDependencies = dependenciesOf(service('gateway'));
    for (const { name, role } of containers)
      if (role === 'api' && name !== 'gateway') expect(gatewayDependencies[name]).toBe('service_healthy');
  });

  test('creates every topic of the event catalog and its dead-letter topic, through the internal listener', () => {
    const topics = Object.values(eventCatalog).flatMap((topic) => [topic.name, topic.deadLetterTopic]);
    const creator = service('kafka-topics');
    expect(environmentOf(creator).TOPICS?.split(/\s+/).sort()).toEqual([...topics].sort());
    expect(String(creator.command)).toContain('--bootstrap-server kafka:9092');
    expect(String(creator.command)).toContain('"$topic"');
  });

  test("gives SEC EDGAR's settings to the containers that read filings; online, they refuse to start without a User-Agent", () => {
    // The stock-report service's filings routes and figures; the sec_filings tool of news and analysis runs, in the
    // containers that run the engine (the news API has none).
    const readers = containers.filter(({ env }) => 'EDGAR_USER_AGENT' in env && 'EDGAR_OFFLINE' in env).map(({ name }) => name);
    expect(readers.sort()).toEqual(['analysis-api', 'analysis-worker', 'news-worker', 'stock-report-api', 'stock-report-worker']);
    // With a Claude key (EDGAR then follows it online) and no User-Agent, each that runs the engine refuses, naming the
    // variable (the stock-report API, which holds no key, serves the bundled sample); with one, each starts.
    const online = readCompose(COMPOSE_FILE, { ...envFile, ANTHROPIC_API_KEY: 'sk-ant-compose-test-0000' });
    const withAgent = readCompose(COMPOSE_FILE, {
      ...envFile,
      ANTHROPIC_API_KEY: 'sk-ant-compose-test-0000',
      EDGAR_USER_AGENT: 'Example Research Ltd ops@example.com',
    });
    for (const { name, shape, env } of containers.filter((container) => readers.includes(container.name))) {
      let refusal = '';
      try {
        parseServiceConfig(shape, environmentOf(online.services[name]!));
      } catch (error) {
        refusal = (error as Error).message;
      }
      expect({ name, refused: refusal.includes('EDGAR_USER_AGENT: is required while filings come from SEC EDGAR (online)') }).toEqual({
        name,
        refused: 'ANTHROPIC_API_KEY' in env,
      });
      expect(parseServiceConfig(shape, environmentOf(withAgent.services[name]!)).EDGAR_USER_AGENT).toBe(
        'Example Research Ltd ops@example.com',
      );
    }
  });

  test("migrates with the image's migration runner, and runs the admin CLI only on demand", () => {
    expect(service('migrate')).toMatchObject({ command: MIGRATE, image: 'fin-gateway:local', restart: 'no' });
    expect(service('admin')).toMatchObject({ entrypoint: ADMIN, image: 'fin-gateway:local', profiles: ['tools'] });
  });
});

describe('.env.example', () => {
  test('names every variable docker-compose.yml reads, and nothing else', () => {
    expect(Object.keys(envExample).sort()).toEqual(referencedVariables(COMPOSE_FILE));
  });

  test('holds no secret: API keys blank, the signing secret and the encryption key obvious placeholders', () => {
    expect(envExample.ANTHROPIC_API_KEY).toBe('');
    expect(envExample.FINNHUB_API_KEY).toBe('');
    expect(envExample.INTERNAL_SIGNING_SECRET).toMatch(/replace/);
    expect(envExample.PORTAL_SESSION_SECRET).toMatch(/replace/);
    expect(envExample.PORTAL_SESSION_SECRET).not.toBe(envExample.INTERNAL_SIGNING_SECRET);
    // Plainly not a key: a "replace" id and 32 zero bytes.
    const [keyId = '', key = ''] = (envExample.CUSTOMER_TOOLS_ENCRYPTION_KEY ?? '').split(':');
    expect(keyId).toMatch(/replace/);
    expect(Buffer.from(key, 'base64')).toEqual(Buffer.alloc(32));
    expect(envExample.CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS).toBe('');
  });

  test('tells how to generate the encryption key', () => {
    expect(readFileSync(ENV_EXAMPLE, 'utf8')).toContain('echo "k1:$(openssl rand -base64 32)"');
  });

  test('holds placeholders every service refuses to start with, naming each one it reads', () => {
    const asIs = readCompose(COMPOSE_FILE, envExample);
    for (const { name, shape } of containers) {
      const reads = PLACEHOLDER_SECRETS.filter((variable) => variable in environmentOf(asIs.services[name]!));
      expect({ name, reads: reads.length > 0 }).toEqual({ name, reads: true });
      let message = '';
      try {
        parseServiceConfig(shape, environmentOf(asIs.services[name]!));
      } catch (error) {
        message = (error as Error).message;
      }
      for (const variable of reads)
        expect({ name, refused: message.includes(`${variable}: is a placeholder`) }).toEqual({ name, refused: true });
    }
  });

  test('tells how to replace the placeholders, with a command that works: then every service starts', () => {
    const text = readFileSync(ENV_EXAMPLE, 'utf8');
    const lines = text.split('\n');
    const start = lines.findIndex((line) => line.startsWith('#   sed -i.bak'));
    expect(start).toBeGreaterThan(0);
    const command: string[] = [];
    for (let index = start; lines[index]?.startsWith('#  '); index++) command.push(lines[index]!.replace(/^#\s+/, ''));
    const dir = mkdtempSync(path.join(tmpdir(), 'fin-env-'));
    try {
      copyFileSync(ENV_EXAMPLE, path.join(dir, '.env'));
      const run = spawnSync('bash', ['-c', command.join('\n')], { cwd: dir, encoding: 'utf8' });
      expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
      const made = readEnvFile(path.join(dir, '.env'));
      const stack = readCompose(COMPOSE_FILE, made);
      for (const variable of PLACEHOLDER_SECRETS)
        expect({ variable, changed: made[variable] !== envExample[variable] }).toEqual({ variable, changed: true });
      for (const { name, shape } of containers) expect(() => parseServiceConfig(shape, environmentOf(stack.services[name]!))).not.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('is needed: without it the services refuse to start, naming the variable', () => {
    const bare = readCompose(COMPOSE_FILE, {});
    const gateway = containers.find((container) => container.name === 'gateway')!;
    expect(() => parseServiceConfig(gateway.shape, environmentOf(bare.services.gateway!))).toThrow(
      /INTERNAL_SIGNING_SECRET: is required but not set/,
    );
    for (const { name, shape } of containers) {
      if (!('CUSTOMER_TOOLS_ENCRYPTION_KEY' in shape)) continue;
      expect(() => parseServiceConfig(shape, environmentOf(bare.services[name]!))).toThrow(
        /CUSTOMER_TOOLS_ENCRYPTION_KEY: is required but not set/,
      );
    }
    const portal = containers.find((container) => container.name === 'portal')!;
    expect(() => parseServiceConfig(portal.shape, environmentOf(bare.services.portal!))).toThrow(
      /PORTAL_SESSION_SECRET: is required but not set/,
    );
  });
});

describe('Compose interpolation as the tests read it', () => {
  test.each([
    ['${A}', { A: 'x' }, 'x'],
    ['${A:-d}', { A: '' }, 'd'],
    ['${A-d}', { A: '' }, ''],
    ['${A-d}', {}, 'd'],
    ['$$A and $A', { A: 'x' }, '$A and x'],
    ['${A:+set}', { A: 'x' }, 'set'],
  ])('%s with %j is %s', (input, env, expected) => {
    expect(interpolate(input, env)).toBe(expected);
  });

  test('${A:?message} fails when A is unset', () => {
    expect(() => interpolate('${A:?set A}', {})).toThrow('A: set A');
  });
});
