// The standard OpenTelemetry variables (opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables),
// the subset this service honours, parsed at start like every other setting: a bad value stops the start and is
// named (exit 78), instead of the SDK logging a warning and exporting nowhere.
import { bool, fraction, int, secret, url } from '@fin/config';
import { z } from 'zod';

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

export const tracingConfigShape = {
  /** true: no SDK, whatever else is set. */
  OTEL_SDK_DISABLED: bool().default(false),
  /** `none` turns export off; `otlp` (the default) exports over OTLP/HTTP once an endpoint is set. */
  OTEL_TRACES_EXPORTER: z.enum(['otlp', 'none']).default('otlp'),
  /** The collector's base URL; traces go to `<endpoint>/v1/traces`. */
  OTEL_EXPORTER_OTLP_ENDPOINT: url(['http', 'https']).optional(),
  /** The full URL for traces, taken as it is; wins over OTEL_EXPORTER_OTLP_ENDPOINT. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url(['http', 'https']).optional(),
  /** `name=value` pairs, comma-separated (a collector's or vendor's credentials): never logged. */
  OTEL_EXPORTER_OTLP_HEADERS: secret(z.string()).optional(),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: secret(z.string()).optional(),
  /** Defaults to the service's name (news, gateway, …). */
  OTEL_SERVICE_NAME: z.string().trim().min(1).optional(),
  OTEL_TRACES_SAMPLER: z.enum(SAMPLERS).default('parentbased_always_on'),
  /** The ratio of the *traceidratio samplers, 0 to 1. */
  OTEL_TRACES_SAMPLER_ARG: fraction().default(1),
  /** The batch span processor (read here: the SDK no longer reads them itself). */
  OTEL_BSP_SCHEDULE_DELAY: int(0, 3_600_000).default(5_000),
  OTEL_BSP_EXPORT_TIMEOUT: int(1, 3_600_000).default(30_000),
  OTEL_BSP_MAX_QUEUE_SIZE: int(1, 1_000_000).default(2_048),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: int(1, 1_000_000).default(512),
  /** One export request's time limit (the traces-only variable wins). */
  OTEL_EXPORTER_OTLP_TIMEOUT: int(1, 3_600_000).default(10_000),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: int(1, 3_600_000).optional(),
};

export type TracingConfig = z.output<z.ZodObject<typeof tracingConfigShape>>;

/** Where spans go, or undefined when tracing is off (no endpoint, the SDK disabled, or the exporter `none`). */
export function tracesEndpoint(config: TracingConfig): string | undefined {
  if (config.OTEL_SDK_DISABLED || config.OTEL_TRACES_EXPORTER === 'none') return undefined;
  if (config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined) return config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  return base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`;
}

/** The export request's headers: the general ones, then the traces-only ones (which win). Values are URL-decoded. */
export function exportHeaders(config: TracingConfig): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const list of [config.OTEL_EXPORTER_OTLP_HEADERS, config.OTEL_EXPORTER_OTLP_TRACES_HEADERS]) {
    for (const pair of (list ?? '').split(',')) {
      const equals = pair.indexOf('=');
      if (equals <= 0) continue;
      headers[pair.slice(0, equals).trim().toLowerCase()] = decoded(pair.slice(equals + 1).trim());
    }
  }
  return headers;
}

function decoded(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
