import { logLevel, port, url } from '@fin/config';
import { z } from 'zod';

/** The gateway's environment. See docs/configuration.md. */
export const gatewayConfigShape = {
  PORT: port().default(8080),
  HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: url(['postgres', 'postgresql']),
  LOG_LEVEL: logLevel().default('info'),
};
